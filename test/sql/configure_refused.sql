-- Once a worker has registered the layout is fixed: IDs already issued
-- must keep decoding, and reissuing must stay impossible.
SET client_min_messages = warning;
SELECT count(*) > 0 AS workers_registered FROM uidgen.worker_node;
SELECT configurable FROM uid_layout();
SELECT regress.try($$SELECT uid_configure(41, 10, 12)$$);
SELECT regress.try($$SELECT uid_configure(epoch => '2025-01-01')$$);
-- The layout in force may be confirmed, so that set-up scripts can run again.
SELECT time_bits, worker_bits, seq_bits, configurable FROM uid_configure();
SELECT time_bits, worker_bits, seq_bits, unit FROM uidgen.config;
