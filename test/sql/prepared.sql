-- A transaction that wrote a not yet committed claim cannot be prepared:
-- the prepared transaction would hold the claim row undecided while the
-- session goes on issuing IDs.  That is a fresh worker's claim: a reused
-- worker's is committed apart before the first ID (065_reused_claim_committed
-- prepares one).
SET client_min_messages = warning;
SET uidgen.worker_reuse = off;
\set VERBOSITY terse
BEGIN;
SELECT uid_next() > 0 AS issued;
PREPARE TRANSACTION 'uidgen_claim';
SELECT count(*) AS prepared FROM pg_prepared_xacts WHERE gid = 'uidgen_claim';
-- The session goes on and commits its claim.
SELECT uid_next() > 0 AS issued;
SELECT status, pid = pg_backend_pid() AS mine FROM uidgen.worker_node WHERE id = uid_current_worker();
BEGIN;
SELECT uid_next() > 0 AS issued;
PREPARE TRANSACTION 'uidgen_after_claim';
COMMIT PREPARED 'uidgen_after_claim';
