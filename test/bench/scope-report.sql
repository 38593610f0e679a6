-- test/bench/scope-report.sql: turns scope.sh's samples into the Markdown
-- tables of its report (printed).
--
-- Every figure is a median over the run's rounds; every ratio of uidgen to
-- its baseline is the median of each round's ratio, measured in the same
-- round on the same cluster, so that a change of the machine's load between
-- rounds falls on both sides.  Run by scope.sh:
--   psql -v samples=FILE -v dense_rows=N -v id_reps=N -f scope-report.sql

\ir report-common.sql

CREATE TEMP TABLE s (
	section text NOT NULL,		-- churn, dense, per_id, scale, insert
	scope   text NOT NULL,		-- server or backend: the cluster
	key     text NOT NULL,		-- uid, identity or bare
	param   int NOT NULL,		-- clients or backends (per_id: rows)
	metric  text NOT NULL,
	round   int NOT NULL,
	value   float8 NOT NULL
);
-- The server reads the file: the clusters run as the user who runs scope.sh.
COPY s FROM :'samples';

CREATE FUNCTION pg_temp.mark(ok boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN ok THEN '**met**' WHEN NOT ok THEN '**missed**' ELSE 'n/a' END $$;

-- Churn: per connection (one transaction each), rather than per second.
INSERT INTO s
SELECT section, scope, key, param, 'ms_per_connection', round, 1000.0 * param / value
  FROM s WHERE section = 'churn' AND metric = 'tps'
 UNION ALL
SELECT section, scope, key, param, 'cpu_ms_per_connection', round, value / 1000
  FROM s WHERE section = 'churn' AND metric = 'cpu_us';

-- uid against identity, round by round, on the same cluster.
CREATE TEMP VIEW pair AS
SELECT u.section, u.scope, u.param, u.metric,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY u.value) AS uid,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY i.value) AS identity,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY u.value / i.value) AS ratio,
       min(u.value / i.value) AS ratio_min, max(u.value / i.value) AS ratio_max, count(*) AS rounds
  FROM s u
  JOIN s i ON i.section = u.section AND i.scope = u.scope AND i.key = 'identity' AND i.param = u.param
          AND i.metric = u.metric AND i.round = u.round
 WHERE u.key = 'uid'
 GROUP BY 1, 2, 3, 4;

-- 2 backends against 1, round by round: on the wall clock (ids_per_s) and
-- on the CPU (cpu_ids_per_s: as if each backend had had a core to itself).
CREATE TEMP VIEW scale AS
SELECT two.scope, two.key, two.metric,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY one.value) AS one,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY two.value) AS two,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY two.value / one.value) AS ratio,
       min(two.value / one.value) AS ratio_min, max(two.value / one.value) AS ratio_max, count(*) AS rounds
  FROM s two
  JOIN s one ON one.section = 'scale' AND one.scope = two.scope AND one.key = two.key AND one.param = 1
            AND one.metric = two.metric AND one.round = two.round
 WHERE two.section = 'scale' AND two.param = 2
 GROUP BY 1, 2, 3;

-- Per ID: every session's figures (id_reps a round), on the wall clock and
-- on the CPU (cpu_ metrics).
CREATE TEMP VIEW per_id AS
SELECT scope, m.cpu,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE key = 'uid' AND metric = m.prefix || 'ns_above_bare') AS above,
       min(value) FILTER (WHERE key = 'uid' AND metric = m.prefix || 'ns_above_bare') AS above_min,
       max(value) FILTER (WHERE key = 'uid' AND metric = m.prefix || 'ns_above_bare') AS above_max,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE key = 'uid' AND metric = m.prefix || 'ns_per_row') AS uid,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY value) FILTER (WHERE key = 'bare' AND metric = m.prefix || 'ns_per_row') AS bare,
       count(*) FILTER (WHERE key = 'uid' AND metric = m.prefix || 'ns_above_bare') AS sessions
  FROM s, (VALUES (true, 'cpu_'), (false, '')) m (cpu, prefix)
 WHERE section = 'per_id'
 GROUP BY 1, 2;

-- The targets, one row a (target, scope).
CREATE TEMP TABLE target (ord int, scope text, target text, measured text, baseline text, ratio text, ok boolean);
INSERT INTO target
SELECT 1, scope, format('churn (`pgbench -C`, %s clients): time per connection ≤ 1.05× identity', param),
       pg_temp.num(uid, 2) || ' ms', 'identity ' || pg_temp.num(identity, 2) || ' ms',
       pg_temp.times(ratio), ratio <= 1.05
  FROM pair WHERE section = 'churn' AND metric = 'ms_per_connection';
INSERT INTO target
SELECT 2, scope, format('%s clients × 100 rows a transaction: PK leaf density ≥ 88 %%', param),
       pg_temp.num(uid, 1) || ' %', 'identity ' || pg_temp.num(identity, 1) || ' %',
       pg_temp.times(ratio), uid >= 88
  FROM pair WHERE section = 'dense' AND metric = 'leaf_density';
INSERT INTO target
SELECT 3, c.scope, '≤ 30 ns per ID above a bare series (on the CPU)',
       format('%s ns (wall clock: %s ns)', pg_temp.num(c.above, 1), pg_temp.num(w.above, 1)),
       'bare series ' || pg_temp.num(c.bare, 1) || ' ns a row',
       pg_temp.times(c.uid / c.bare) || ' a row', c.above <= 30
  FROM per_id c JOIN per_id w ON w.scope = c.scope AND NOT w.cpu
 WHERE c.cpu;
INSERT INTO target
SELECT 4, u.scope, '2 backends at once ≥ 1.8× the IDs/s of 1',
       pg_temp.num(u.two / 1e6, 2) || ' M IDs/s', '1 backend ' || pg_temp.num(u.one / 1e6, 2) || ' M IDs/s',
       format('%s (bare series %s; on the CPU %s)', pg_temp.times(u.ratio), pg_temp.times(b.ratio), pg_temp.times(c.ratio)),
       u.ratio >= 1.8
  FROM scale u
  LEFT JOIN scale b ON b.scope = u.scope AND b.key = 'bare' AND b.metric = u.metric
  LEFT JOIN scale c ON c.scope = u.scope AND c.key = u.key AND c.metric = 'cpu_ids_per_s'
 WHERE u.key = 'uid' AND u.metric = 'ids_per_s';
INSERT INTO target
SELECT 5, scope, format('insert tps, %s client%s: within 5 %% of identity', param, CASE WHEN param > 1 THEN 's' ELSE '' END),
       pg_temp.num(uid, 0) || ' tps', 'identity ' || pg_temp.num(identity, 0) || ' tps',
       pg_temp.times(ratio), ratio >= 0.95
  FROM pair WHERE section = 'insert' AND metric = 'tps';

\qecho '## Targets'
\qecho
\qecho '| # | target | scope | uidgen | baseline (same run) | ratio | |'
\qecho '|---|---|---|---:|---:|---:|---|'
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', ord, target, scope, measured, baseline, ratio, pg_temp.mark(ok))
  FROM target
 ORDER BY ord, target, scope DESC;
\qecho
SELECT format('%s of %s met.', count(*) FILTER (WHERE ok), count(*)) FROM target;
\qecho

\qecho '## Details'
\qecho
\qecho 'The spread of the per-round ratios shows how steady each figure was; backend CPU is the CPU time of the backends a run started, as the postmaster collects it when they end, plus the keeper''s (scope server).'
\qecho
\qecho '| # | figure | scope | uidgen | baseline | ratio (median) | ratio, lowest–highest | rounds |'
\qecho '|---|---|---|---:|---:|---:|---:|---:|'
WITH d AS (
	SELECT 1 AS ord, 1 AS sub, scope, 'time per connection, ms' AS figure, uid, identity, ratio, ratio_min, ratio_max, rounds, 2 AS digits
	  FROM pair WHERE section = 'churn' AND metric = 'ms_per_connection'
	UNION ALL
	SELECT 1, 2, scope, 'backend CPU per connection, ms', uid, identity, ratio, ratio_min, ratio_max, rounds, 2
	  FROM pair WHERE section = 'churn' AND metric = 'cpu_ms_per_connection'
	UNION ALL
	SELECT 2, 1, scope, 'PK leaf density, %', uid, identity, ratio, ratio_min, ratio_max, rounds, 1
	  FROM pair WHERE section = 'dense' AND metric = 'leaf_density'
	UNION ALL
	SELECT 2, 2, scope, 'PK size, MiB', uid / 1048576, identity / 1048576, ratio, ratio_min, ratio_max, rounds, 1
	  FROM pair WHERE section = 'dense' AND metric = 'index_bytes'
	UNION ALL
	SELECT 2, 3, scope, format('transactions of 100 rows a second (%s rows in all)', :dense_rows), uid, identity, ratio, ratio_min, ratio_max, rounds, 0
	  FROM pair WHERE section = 'dense' AND metric = 'tps'
	UNION ALL
	SELECT 3, CASE WHEN cpu THEN 1 ELSE 2 END, scope,
	       format('ns per ID above the bare series, %s (baseline: the bare series a row)',
	              CASE WHEN cpu THEN 'on the CPU' ELSE 'wall clock' END),
	       above, bare, uid / bare, above_min, above_max, sessions, 1
	  FROM per_id
	UNION ALL
	SELECT 4, CASE key WHEN 'uid' THEN 1 ELSE 3 END + CASE metric WHEN 'ids_per_s' THEN 0 ELSE 1 END, scope,
	       format('%s: 2 backends (baseline: 1), M values/s%s', CASE key WHEN 'uid' THEN '`uid_next()`' ELSE 'bare series' END,
	              CASE metric WHEN 'ids_per_s' THEN '' ELSE ' on the CPU' END),
	       two / 1e6, one / 1e6, ratio, ratio_min, ratio_max, rounds, 2
	  FROM scale
	UNION ALL
	SELECT 5, param, scope, format('insert tps, %s client%s', param, CASE WHEN param > 1 THEN 's' ELSE '' END),
	       uid, identity, ratio, ratio_min, ratio_max, rounds, 0
	  FROM pair WHERE section = 'insert' AND metric = 'tps'
	UNION ALL
	SELECT 5, 10 + param, scope, format('backend CPU per insert, %s client%s, µs', param, CASE WHEN param > 1 THEN 's' ELSE '' END),
	       uid, identity, ratio, ratio_min, ratio_max, rounds, 1
	  FROM pair WHERE section = 'insert' AND metric = 'cpu_us'
)
SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s |', ord, figure, scope, pg_temp.num(uid, digits),
              pg_temp.num(identity, digits), pg_temp.times(ratio),
              -- per ID: the range of the ns above the series, not of a ratio
              CASE WHEN ord = 3 THEN pg_temp.num(ratio_min, 1) || '–' || pg_temp.num(ratio_max, 1) || ' ns'
                   ELSE pg_temp.times(ratio_min) || '–' || pg_temp.times(ratio_max) END,
              rounds)
  FROM d
 ORDER BY ord, sub, scope DESC;
\qecho
SELECT format('Per ID (3): %s sessions a round, each timing the bare series and `uid_next()` over it, the series first in every other session; the range is of the ns above the series. '
              '"On the CPU": the backend''s user and system time for the statement (`getrusage()`, as `log_statement_stats` reports it), which leaves out the time it waited for a CPU another process had; '
              'for scaling (4), the rows of all backends over the longest CPU time of one, as if each had had a core of its own.',
              :id_reps);
\qecho
