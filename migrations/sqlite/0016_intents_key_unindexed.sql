-- The work queue's index on an intent's key (0014) is dropped on SQLite.
-- The key is a random 64-hex string, so every new intent wrote a random
-- leaf page of the index into the WAL, and checkpoints wrote each back:
-- record_intent with one caller fell to 0.67x of its throughput before 0014
-- (docs/PERFORMANCE.md). The monitor reads an uncertain key's intent only
-- when the key is first listed, in one pass over the tenant's intents for
-- the whole list (INTENT_FACTS), and keeps the answer; PostgreSQL keeps the
-- index, where the batch writer spreads its cost over each batch.
drop index if exists intents_key;
