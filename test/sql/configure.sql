-- uid_configure(): validation, and changes before the first ID.
SET client_min_messages = warning;

-- Layouts that do not add up, epochs in the future, unknown units.
SELECT regress.try($$SELECT uid_configure(time_bits => 0)$$);
SELECT regress.try($$SELECT uid_configure(worker_bits => -1)$$);
SELECT regress.try($$SELECT uid_configure(seq_bits => 0)$$);
SELECT regress.try($$SELECT uid_configure(41, 13, 10)$$);
SELECT regress.try($$SELECT uid_configure(2147483647, 13, 9)$$);
SELECT regress.try($$SELECT uid_configure(epoch => '2999-01-01 00:00:00+00')$$);
SELECT regress.try($$SELECT uid_configure(epoch => 'infinity')$$);
SELECT regress.try($$SELECT uid_configure(epoch => '2026-01-01 00:00:00.0001+00')$$);
SELECT regress.try($$SELECT uid_configure(unit => 'fortnight')$$);
-- UidGenerator's own default, 28/22/13 seconds from 2016-05-20 UTC+8, ran out on 2024-11-20.
SELECT regress.try($$SELECT uid_configure(28, 22, 13, '2016-05-20 00:00:00+08', 'second')$$);

-- Nothing changed.
SELECT time_bits, worker_bits, seq_bits, epoch AT TIME ZONE 'UTC' AS epoch_utc, unit FROM uidgen.config;

-- A valid change before any worker registered: Twitter's 41/10/12 milliseconds.
SELECT time_bits, worker_bits, seq_bits, unit, max_worker_id, ids_per_unit, configurable
  FROM uid_configure(41, 10, 12, '2026-01-01 00:00:00+00', 'millisecond');
SELECT time_bits, worker_bits, seq_bits, unit FROM uid_layout();
-- A seconds layout in the shape of UidGenerator's, with an epoch that leaves it years.
SELECT time_bits, worker_bits, seq_bits, unit, max_worker_id, ids_per_unit, ids_per_second,
       years_left > 8 AS years_left_ok
  FROM uid_configure(30, 20, 13, '2026-01-01 00:00:00+00', 'seconds');

-- A transaction that configures and rolls back leaves the layout as it was.
BEGIN;
SELECT time_bits FROM uid_configure(35, 14, 14);
SELECT time_bits FROM uid_layout();
ROLLBACK;
SELECT time_bits, worker_bits, seq_bits, unit FROM uid_layout();

-- Back to the default layout (named arguments take the defaults).
SELECT time_bits, worker_bits, seq_bits, unit, configurable FROM uid_configure();
SELECT count(*) AS config_rows FROM uidgen.config;

-- The time reservation counts units of the layout: a change sets it back to
-- "nothing issued" (no worker has registered, or the change is refused).
SELECT last_value, is_called FROM uidgen.reserved_until;
