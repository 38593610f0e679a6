-- test/bench/report.sql: turns the samples in bench.sample into Markdown
-- tables (printed) and the data files of the chart (in :dir).
--
-- Every figure is a median over the rounds of one run; every ratio compares
-- figures of the same run.  Run by run.sh:  psql -v dir=DIR -f report.sql

\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
\pset footer off
\pset fieldsep '\t'
SET client_min_messages = warning;

-- How the keys of the samples are shown: in the tables, and in the chart.
CREATE TEMP TABLE label (key text PRIMARY KEY, md text, plain text, kind text, ord int);
INSERT INTO label VALUES
	('bare',          'bare series',                          'bare series',        'base',   1),
	('random',        '`random()`',                           'random()',           'other',  2),
	('clock',         '`clock_timestamp()` (reads the clock)', 'clock_timestamp()', 'other',  3),
	('nextval_c1',    '`nextval` CACHE 1',                    'nextval CACHE 1',    'base',   4),
	('nextval_c1000', '`nextval` CACHE 1000',                 'nextval CACHE 1000', 'base',   5),
	('uid_cached',    '**`uid_next()`** (cached)',            'uid_next() cached',  'uid',    6),
	('uid_default',   '`uid_next()` (default generator)',     'uid_next() default', 'uid',    7),
	('uid_batch',     '`uid_next_batch()`',                   'uid_next_batch()',   'uid',    8),
	('identity',      'identity bigint',                      'identity',           'base',  10),
	('uid',           '**`DEFAULT uid_next()`**',             'uid_next()',         'uid',   11),
	('uid_ms',        '**uid, milliseconds** (41/13/9)',      'uid ms',             'uid',   12),
	('uid_s',         'uid, seconds (28/22/13)',              'uid s',              'uid',   13),
	('uuid',          '`gen_random_uuid()`',                  'gen_random_uuid()',  'other', 14),
	('uuidv7',        'UUIDv7 (random within the ms)',        'UUIDv7',             'other', 15),
	('uuidv7_core',   '`uuidv7()` (core, PostgreSQL 18)',     'uuidv7()',           'other', 16);

CREATE FUNCTION pg_temp.num(x float8, digits int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(round(x::numeric, digits)::text, 'n/a') $$;
CREATE FUNCTION pg_temp.big(x float8) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(to_char(round(x::numeric), 'FM999,999,999,999,990'), 'n/a') $$;
CREATE FUNCTION pg_temp.times(x float8) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(round(x::numeric, 2)::text || '×', 'n/a') $$;
-- How the run was made (run.sh records it as section 'meta').
CREATE FUNCTION pg_temp.meta(name text) RETURNS float8
LANGUAGE sql STABLE AS $$ SELECT max(value) FROM bench.sample WHERE section = 'meta' AND key = name $$;
CREATE FUNCTION pg_temp.mark(ok boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN ok THEN '**met**' WHEN NOT ok THEN '**missed**' ELSE 'n/a' END $$;

-- Medians of every (section, key, param, metric).
CREATE TEMP TABLE med AS
SELECT section, key, param, metric,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS v, count(*) AS n
  FROM bench.sample
 GROUP BY 1, 2, 3, 4;

-- Generation: each round's cost per row, and its excess over the bare series
-- of the same round (pairing by round keeps drift in the machine's load out).
CREATE TEMP TABLE gen AS
WITH per_round AS (
	SELECT s.key, s.round,
	       s.value * 1e9 / s.param AS ns,
	       (s.value - b.value) * 1e9 / s.param AS above
	  FROM bench.sample s
	  JOIN bench.sample b ON b.section = 'gen' AND b.key = 'bare' AND b.round = s.round AND b.param = s.param
	 WHERE s.section = 'gen'
)
SELECT key,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY ns) AS ns,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY above) AS above,
       count(*) AS rounds
  FROM per_round
 GROUP BY key;

CREATE TEMP VIEW gen_ratio AS
SELECT g.key, g.ns, g.above,
       g.ns / b.ns AS per_row_vs_bare,
       g.ns / c.ns AS per_row_vs_nextval,
       g.above / nullif(c.above, 0) AS above_vs_nextval
  FROM gen g, gen b, gen c
 WHERE b.key = 'bare' AND c.key = 'nextval_c1';

-- Scaling: IDs/s with k backends, and the ratio to one backend: the median
-- of each round's ratio, so that the machine's load is compared within a round.
CREATE TEMP VIEW scale AS
SELECT s.key, s.param AS backends,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value) AS ids_per_s,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value / one.value) AS vs_one
  FROM bench.sample s
  JOIN bench.sample one ON one.section = 'scale' AND one.key = s.key AND one.param = 1
                       AND one.metric = s.metric AND one.round = s.round
 WHERE s.section = 'scale' AND s.metric = 'ids_per_s'
 GROUP BY 1, 2;

-- Inserts and churn: tps, and the ratio to identity at the same client count,
-- the median of each round's ratio (paired by round, as above).
CREATE TEMP VIEW tps AS
SELECT s.section, s.key, s.param AS clients,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value) AS tps,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value / id.value) AS vs_identity
  FROM bench.sample s
  JOIN bench.sample id ON id.section = s.section AND id.key = 'identity' AND id.param = s.param
                      AND id.metric = s.metric AND id.round = s.round
 WHERE s.section IN ('insert', 'churn') AND s.metric = 'tps'
 GROUP BY 1, 2, 3;

-- Backend CPU per transaction (run.sh: the postmaster's collected children),
-- and its ratio to identity, paired by round.
CREATE TEMP VIEW cpu AS
SELECT s.section, s.key, s.param AS clients,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value) AS cpu_us,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY s.value / id.value) AS vs_identity
  FROM bench.sample s
  JOIN bench.sample id ON id.section = s.section AND id.key = 'identity' AND id.param = s.param
                      AND id.metric = s.metric AND id.round = s.round
 WHERE s.section IN ('insert', 'churn') AND s.metric = 'cpu_us'
 GROUP BY 1, 2, 3;

-- The primary key's leaf density after each insert run.
CREATE TEMP VIEW insert_density AS
SELECT key, param AS clients, v AS leaf_density FROM med WHERE section = 'insert' AND metric = 'leaf_density';

-- Loads: one row per (key, mode) with every metric, and ratios to identity.
-- A mode is known by its rows per statement (param).
CREATE TEMP VIEW load AS
WITH w AS (
	SELECT key, param AS batch,
	       max(v) FILTER (WHERE metric = 'clients')::int AS clients,
	       max(v) FILTER (WHERE metric = 'index_bytes') AS index_bytes,
	       max(v) FILTER (WHERE metric = 'leaf_density') AS leaf_density,
	       max(v) FILTER (WHERE metric = 'leaf_fragmentation') AS leaf_fragmentation,
	       max(v) FILTER (WHERE metric = 'seconds') AS seconds,
	       max(v) FILTER (WHERE metric = 'wal_bytes') AS wal_bytes
	  FROM med
	 WHERE section = 'load'
	 GROUP BY 1, 2
)
SELECT w.*, w.index_bytes / i.index_bytes AS index_vs_identity, w.seconds / i.seconds AS seconds_vs_identity,
       w.wal_bytes / i.wal_bytes AS wal_vs_identity,
       dense_rank() OVER (ORDER BY w.clients, w.batch DESC) AS mode,
       format('%s client%s, %s', w.clients, CASE WHEN w.clients > 1 THEN 's' ELSE '' END,
              CASE WHEN w.batch * w.clients = pg_temp.meta('load_rows') THEN
                       CASE WHEN w.clients > 1 THEN 'one statement each' ELSE 'one statement' END
                   ELSE w.batch || ' rows a transaction' END) AS mode_title
  FROM w JOIN w i ON i.key = 'identity' AND i.batch = w.batch;

------------------------------------------------------------------------------
-- Targets
\qecho '### Targets'
\qecho
\qecho '| target (from the issue) | measured | |'
\qecho '|---|---|---|'
SELECT format('| `uid_next()` ≤ 30 ns per ID above the bare series | %s ns | %s |',
              pg_temp.num(above, 1), pg_temp.mark(above <= 30))
  FROM gen_ratio WHERE key = 'uid_cached';
SELECT format('| `uid_next()` ≤ 0.4× `nextval` CACHE 1 per row | %s per row (%s of its cost above the series) | %s |',
              pg_temp.times(per_row_vs_nextval), pg_temp.times(above_vs_nextval),
              pg_temp.mark(per_row_vs_nextval <= 0.4))
  FROM gen_ratio WHERE key = 'uid_cached';
SELECT format('| two backends ≥ 1.8× one (`uid_next()`) | %s (bare series on this machine: %s) | %s |',
              pg_temp.times(u.vs_one), pg_temp.times(b.vs_one), pg_temp.mark(u.vs_one >= 1.8))
  FROM scale u, scale b
 WHERE u.key = 'uid_cached' AND u.backends = 2 AND b.key = 'bare' AND b.backends = 2;
SELECT format('| insert tps with `DEFAULT uid_next()` within 5 %% of identity at 1, 2, 8 clients | %s (backend CPU per transaction: %s) | %s |',
              string_agg(format('%s: %s', t.clients, pg_temp.times(t.vs_identity)), ', ' ORDER BY t.clients),
              string_agg(format('%s', pg_temp.times(c.vs_identity)), ', ' ORDER BY t.clients),
              pg_temp.mark(bool_and(t.vs_identity >= 0.95)))
  FROM tps t LEFT JOIN cpu c USING (section, key, clients)
 WHERE t.section = 'insert' AND t.key = 'uid';
SELECT format('| bulk-load PK index within 2 %% of identity''s size | %s MiB vs %s MiB: %s | %s |',
              pg_temp.num(u.index_bytes / 1048576, 1), pg_temp.num(i.index_bytes / 1048576, 1),
              pg_temp.times(u.index_vs_identity), pg_temp.mark(u.index_vs_identity <= 1.02))
  FROM load u JOIN load i ON i.key = 'identity' AND i.batch = u.batch
 WHERE u.key = 'uid_ms' AND u.clients = 1;
SELECT format('| with 8 concurrent clients, uid index leaf density ≥ 85 %% | %s | %s |',
              string_agg(format('%s %% with %s (identity: %s %%)', pg_temp.num(u.leaf_density, 1), u.mode_title,
                                pg_temp.num(i.leaf_density, 1)), '; ' ORDER BY u.mode),
              pg_temp.mark(bool_and(u.leaf_density >= 85)))
  FROM load u JOIN load i ON i.key = 'identity' AND i.batch = u.batch
 WHERE u.key = 'uid_ms' AND u.clients > 1;
SELECT format('| a churning connection pays ≤ 10 %% more than with identity | %s the time per connection (backend CPU: %s) | %s |',
              pg_temp.times(1 / t.vs_identity), pg_temp.times(c.vs_identity), pg_temp.mark(1 / t.vs_identity <= 1.10))
  FROM tps t LEFT JOIN cpu c USING (section, key, clients)
 WHERE t.section = 'churn' AND t.key = 'uid';
\qecho

------------------------------------------------------------------------------
\qecho '### 1. Generation cost, one backend'
\qecho
SELECT format('`SELECT count(f) FROM (SELECT <expr> AS f FROM generate_series(1, %s) g) s`, each in a new '
              'backend after a warm-up; medians of %s interleaved rounds (A B C, B C A, ...). '
              '`uid_next_batch()`: `SELECT count(f) FROM uid_next_batch(n) f`, as many IDs in calls of up to '
              '1,000,000. "Above bare" is paired by round.',
              pg_temp.big(pg_temp.meta('gen_rows')), pg_temp.meta('gen_rounds'));
\qecho
\qecho '| expression | ns per row | ns per ID above bare | per row × bare | per row × `nextval` CACHE 1 | above bare × `nextval` CACHE 1 |'
\qecho '|---|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s |', l.md, pg_temp.num(g.ns, 1), pg_temp.num(g.above, 1),
              pg_temp.times(g.per_row_vs_bare), pg_temp.times(g.per_row_vs_nextval),
              pg_temp.times(g.above_vs_nextval))
  FROM gen_ratio g JOIN label l USING (key)
 ORDER BY l.ord;
\qecho

------------------------------------------------------------------------------
\qecho '### 2. Scaling'
\qecho
SELECT format('The statements of section 1 in 1 to %s backends released at once, each backend making as many '
              'rows as keep it busy for about %s s (from section 1''s medians; at most %s); IDs/s of all '
              'backends together, from the first start to the last finish; medians of %s rounds, the ratios '
              'paired by round.',
              max(param), pg_temp.meta('scale_seconds'), pg_temp.big(pg_temp.meta('gen_rows')),
              pg_temp.meta('scale_rounds'))
  FROM bench.sample WHERE section = 'scale';
\qecho
SELECT '| expression | rows per backend | '
       || string_agg(format('%s backend%s, IDs/s', k, CASE WHEN k > 1 THEN 's' ELSE '' END), ' | ' ORDER BY k)
       || ' | ' || string_agg(format('%s/1', k), ' | ' ORDER BY k) FILTER (WHERE k > 1) || ' |'
  FROM (SELECT DISTINCT backends AS k FROM scale) ks;
SELECT '|---|---:|' || repeat('---:|', 2 * count(*)::int - 1)
  FROM (SELECT DISTINCT backends FROM scale) ks;
SELECT format('| %s | %s | %s | %s |', l.md, pg_temp.big(r.v),
              string_agg(pg_temp.big(s.ids_per_s), ' | ' ORDER BY s.backends),
              string_agg(pg_temp.times(s.vs_one), ' | ' ORDER BY s.backends) FILTER (WHERE s.backends > 1))
  FROM scale s JOIN label l USING (key)
  JOIN med r ON r.section = 'scale' AND r.metric = 'rows' AND r.key = s.key AND r.param = 1
 GROUP BY l.md, l.ord, r.v
 ORDER BY l.ord;
\qecho

------------------------------------------------------------------------------
\qecho '### 3. Inserts (pgbench)'
\qecho
SELECT format('`INSERT INTO t (v) VALUES (1)`, one row a transaction, `-M prepared`, `synchronous_commit = off`, '
              '%s s a run, each from an empty table; medians of %s interleaved rounds, the ratios paired by round.',
              pg_temp.meta('insert_seconds'), pg_temp.meta('insert_rounds'));
\qecho
SELECT '| key | ' || string_agg(format('%s client%s, tps | × identity | leaf density %%', c, CASE WHEN c > 1 THEN 's' ELSE '' END), ' | ' ORDER BY c) || ' |'
  FROM (SELECT DISTINCT clients AS c FROM tps WHERE section = 'insert') cs;
SELECT '|---|' || repeat('---:|', 3 * count(*)::int)
  FROM (SELECT DISTINCT clients FROM tps WHERE section = 'insert') cs;
SELECT format('| %s | %s |', l.md,
              string_agg(format('%s | %s | %s', pg_temp.big(t.tps), pg_temp.times(t.vs_identity),
                                pg_temp.num(d.leaf_density, 1)), ' | ' ORDER BY t.clients))
  FROM tps t JOIN label l USING (key)
  LEFT JOIN insert_density d USING (key, clients)
 WHERE t.section = 'insert'
 GROUP BY l.md, l.ord
 ORDER BY l.ord;
\qecho
\qecho 'Leaf density: `pgstatindex()` of the primary key at the end of each run (median). The CPU time the backends spent per transaction, which a busy machine disturbs much less than tps (the CPU time of the backends a pgbench run started, as the postmaster collects it when they end):'
\qecho
SELECT '| key | ' || string_agg(format('%s client%s, µs CPU per transaction | × identity', c, CASE WHEN c > 1 THEN 's' ELSE '' END), ' | ' ORDER BY c) || ' |'
  FROM (SELECT DISTINCT clients AS c FROM cpu WHERE section = 'insert') cs;
SELECT '|---|' || repeat('---:|', 2 * count(*)::int)
  FROM (SELECT DISTINCT clients FROM cpu WHERE section = 'insert') cs;
SELECT format('| %s | %s |', l.md,
              string_agg(format('%s | %s', pg_temp.num(c.cpu_us, 1), pg_temp.times(c.vs_identity)), ' | ' ORDER BY c.clients))
  FROM cpu c JOIN label l USING (key)
 WHERE c.section = 'insert'
 GROUP BY l.md, l.ord
 ORDER BY l.ord;
\qecho

------------------------------------------------------------------------------
\qecho '### 4. Index locality'
\qecho
SELECT format('%s rows into `t (id <key> PRIMARY KEY, v int)`, three ways: in one `INSERT ... SELECT`; by %s '
              'clients at once with one statement each; and by %s clients with 100 rows a transaction (pgbench). '
              'Size, leaf density and fragmentation of the primary key from `pgstatindex()`; WAL from '
              '`pg_current_wal_insert_lsn()`; time on the client. One run each.',
              pg_temp.big(pg_temp.meta('load_rows')), pg_temp.meta('load_clients'), pg_temp.meta('load_clients'));
\qecho
\qecho '| key | load | PK index MiB | × identity | leaf density % | leaf fragmentation % | time s | × identity | WAL MiB | × identity |'
\qecho '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |', l.md, d.mode_title,
              pg_temp.num(d.index_bytes / 1048576, 1), pg_temp.times(d.index_vs_identity),
              pg_temp.num(d.leaf_density, 1), pg_temp.num(d.leaf_fragmentation, 1),
              pg_temp.num(d.seconds, 2), pg_temp.times(d.seconds_vs_identity),
              pg_temp.num(d.wal_bytes / 1048576, 1), pg_temp.times(d.wal_vs_identity))
  FROM load d JOIN label l USING (key)
 ORDER BY d.mode, l.ord;
\qecho

------------------------------------------------------------------------------
\qecho '### 5. Connection churn (pgbench -C)'
\qecho
SELECT format('The insert of section 3 with a new connection for every transaction (`pgbench -C`), %s clients, '
              '%s s a run; medians of %s interleaved rounds, the ratios paired by round. A uid connection '
              'registers a worker on its first ID and releases it at exit.',
              pg_temp.meta('churn_clients'), pg_temp.meta('churn_seconds'), pg_temp.meta('churn_rounds'));
\qecho
\qecho '| key | tps | ms per connection | × identity (time) | extra ms per connection | backend CPU ms per connection | × identity (CPU) |'
\qecho '|---|---:|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', l.md, pg_temp.num(t.tps, 1),
              pg_temp.num(1000.0 * t.clients / t.tps, 2), pg_temp.times(1 / t.vs_identity),
              pg_temp.num(1000.0 * t.clients * (1 / t.tps - 1 / i.tps), 2),
              pg_temp.num(c.cpu_us / 1000, 2), pg_temp.times(c.vs_identity))
  FROM tps t JOIN label l USING (key)
  JOIN tps i ON i.section = 'churn' AND i.key = 'identity' AND i.clients = t.clients
  LEFT JOIN cpu c ON c.section = t.section AND c.key = t.key AND c.clients = t.clients
 WHERE t.section = 'churn'
 ORDER BY l.ord;
\qecho

------------------------------------------------------------------------------
-- Data for the chart (chart.gp): tab-separated, one file a panel.
\o :dir/gen.dat
SELECT l.plain, l.kind, round(g.per_row_vs_bare::numeric, 3), round(g.above::numeric, 1)
  FROM gen_ratio g JOIN label l USING (key) ORDER BY l.ord;
\o :dir/scale.dat
SELECT l.plain, l.kind, round(s.vs_one::numeric, 3)
  FROM scale s JOIN label l USING (key) WHERE s.backends = 2 ORDER BY l.ord;
-- One row per client count, one column per key, with a header row.
\o :dir/insert.dat
SELECT 'clients' || E'\t' || string_agg(l.plain, E'\t' ORDER BY l.ord)
  FROM (SELECT DISTINCT key FROM tps WHERE section = 'insert') k JOIN label l USING (key);
SELECT t.clients || CASE WHEN t.clients = 1 THEN ' client' ELSE ' clients' END || E'\t'
       || string_agg(round(t.vs_identity::numeric, 3)::text, E'\t' ORDER BY l.ord)
  FROM tps t JOIN label l USING (key) WHERE t.section = 'insert' GROUP BY t.clients ORDER BY t.clients;
\o :dir/insert.xtics
SELECT 'set xtics (' || string_agg(format('"%s client%s" %s', clients, CASE WHEN clients > 1 THEN 's' ELSE '' END, n - 1), ', ' ORDER BY clients) || ')'
  FROM (SELECT clients, row_number() OVER (ORDER BY clients) AS n
          FROM (SELECT DISTINCT clients FROM tps WHERE section = 'insert') c) cs;
\o :dir/insert.kinds
SELECT string_agg(l.kind, ' ' ORDER BY l.ord)
  FROM (SELECT DISTINCT key FROM tps WHERE section = 'insert') k JOIN label l USING (key);
\o :dir/churn.dat
SELECT l.plain, l.kind, round((1 / t.vs_identity)::numeric, 3)
  FROM tps t JOIN label l USING (key) WHERE t.section = 'churn' ORDER BY l.ord;
-- One column per mode for the size, then one per mode for the density.
\o :dir/load.dat
SELECT 'key' || E'\t' || 'kind' || E'\t' || string_agg(mode_title, E'\t' ORDER BY mode) || E'\t'
       || string_agg(mode_title, E'\t' ORDER BY mode)
  FROM (SELECT DISTINCT mode, mode_title FROM load) m;
SELECT l.plain || E'\t' || l.kind || E'\t'
       || string_agg(round((d.index_bytes / 1048576)::numeric, 1)::text, E'\t' ORDER BY d.mode) || E'\t'
       || string_agg(round(d.leaf_density::numeric, 1)::text, E'\t' ORDER BY d.mode)
  FROM load d JOIN label l USING (key) GROUP BY l.plain, l.ord, l.kind ORDER BY l.ord;
\o :dir/load.xtics
SELECT 'set xtics (' || string_agg(format('"%s" %s', plain, n - 1), ', ' ORDER BY n) || ')'
  FROM (SELECT l.plain, row_number() OVER (ORDER BY l.ord) AS n
          FROM (SELECT DISTINCT key FROM load) k JOIN label l USING (key)) ks;
\o
