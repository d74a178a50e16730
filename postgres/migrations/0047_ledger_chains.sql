-- The ledger becomes several hash chains, so that replicas appending at
-- once do not queue on one head row (docs/architecture.md, "The ledger's
-- chains"). An entry keeps its id (the order across chains, now drawn from
-- activity_id) and gains its chain and its position on it; its previous
-- entry is the one at seq - 1 on the same chain. Every existing entry is
-- at position id of chain 1, where it hashes as before, so an existing
-- ledger verifies unchanged. activity_head keeps one row a chain: id is
-- the chain, last_id the position of its last entry.
ALTER TABLE activity ADD COLUMN chain smallint NOT NULL DEFAULT 1, ADD COLUMN seq bigint;
UPDATE activity SET seq = id;
ALTER TABLE activity ALTER COLUMN seq SET NOT NULL, ALTER COLUMN chain DROP DEFAULT;
CREATE UNIQUE INDEX activity_by_chain ON activity (chain, seq);
CREATE SEQUENCE activity_id AS bigint;
SELECT setval('activity_id', max(id)) FROM activity HAVING max(id) IS NOT NULL;
ALTER TABLE activity_head DROP CONSTRAINT activity_head_id_check;
ALTER TABLE activity_head ADD CONSTRAINT activity_head_chain CHECK (id BETWEEN 1 AND 64);
INSERT INTO activity_head (id, last_id, last_hash) SELECT g, 0, '' FROM generate_series(2, 8) g;
