-- The candidate as its first delivery sent it, beside the normalized fields
-- the key covers. A worker acts on this one, in its own names and formats:
-- the normalized `valor` is cents as text ("18000"), and reading it as
-- reais charges a hundred times the amount. Written by the insert only; a
-- redelivery never replaces it, and a correction writes the corrected one.
-- Intents recorded before this migration have none (null).
alter table intents add column candidate text;

-- The client-chosen id of the attempt holding a claim: a claimer whose
-- answer was lost asks again with the same id and gets its own token back,
-- instead of "in flight" for a claim it holds itself.
alter table actions add column attempt_id text;
