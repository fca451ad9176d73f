-- The error of the attempt a claim replaced, beside the other `prev_*`
-- columns, so the attempt's history keeps what each attempt ended with
-- (the provider acted and its answer was N bytes; the effect raised) after
-- a later attempt writes its own reason. A takeover of an attempt whose
-- outcome is unknown now starts the new attempt with no error of its own.
alter table actions add column prev_error text;
