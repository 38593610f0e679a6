-- test/bench/registry-report.sql: turns registry.sh's samples into the
-- Markdown of its report (printed).
--
-- Every figure is a median over the run's samples; every ratio is the median
-- of per-round ratios, each side measured in the same round (and, for the
-- races, the same race number), so that a change of the machine's load
-- between rounds falls on both.  Run by registry.sh:
--   psql -v samples=FILE -v races=N -v id_reps=N -v id_rows=N -v first_seconds=N
--        -v churn_seconds=N -v churn_clients=N -f registry-report.sql

\ir report-common.sql

CREATE TEMP TABLE s (
	section text NOT NULL,		-- first, claim, cold, churn, per_id
	cluster text NOT NULL,		-- member, plain or registry
	key     text NOT NULL,		-- uid, select1; fast, slow, blocks; backend, server; bare
	param   int NOT NULL,		-- clients (claim: the race of the round; per_id: rows)
	metric  text NOT NULL,
	round   int NOT NULL,
	value   float8 NOT NULL
);
-- The server reads the file: the clusters run as the user who runs registry.sh.
COPY s FROM :'samples';

-- Connections: time and backend CPU per connection rather than tps.
INSERT INTO s
SELECT section, cluster, key, param, 'ms', round, 1000.0 * param / value
  FROM s WHERE section IN ('first', 'churn') AND metric = 'tps'
 UNION ALL
SELECT section, cluster, key, param, 'cpu_ms', round, value / 1000
  FROM s WHERE section IN ('first', 'churn') AND metric = 'cpu_us';


-- vs: one figure (section, metric) of cluster a and key a against the same
-- figure of cluster b and key b, paired by round and param.
CREATE FUNCTION pg_temp.vs(sec text, met text, ac text, ak text, bc text, bk text,
                           OUT a float8, OUT b float8, OUT ratio float8, OUT lo float8, OUT hi float8, OUT n bigint)
LANGUAGE sql STABLE AS $$
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x.value), percentile_cont(0.5) WITHIN GROUP (ORDER BY y.value),
	       percentile_cont(0.5) WITHIN GROUP (ORDER BY x.value / y.value), min(x.value / y.value), max(x.value / y.value),
	       count(*)
	  FROM s x
	  JOIN s y ON y.section = x.section AND y.metric = x.metric AND y.round = x.round AND y.param = x.param
	          AND y.cluster = bc AND y.key = bk
	 WHERE x.section = sec AND x.metric = met AND x.cluster = ac AND x.key = ak
$$;

-- The rows of the table: # | figure | measured | baseline | ratio | range | samples.
CREATE TEMP TABLE fig (ord int, sub int, figure text, measured text, baseline text, ratio text, spread text, n bigint);

-- The figures against their baselines: # | figure | section, metric |
-- cluster, key and label of the measured side | of the baseline | unit,
-- digits.
INSERT INTO fig
SELECT f.ord, f.sub, f.figure, f.alabel || ' ' || pg_temp.num(v.a, f.digits) || f.unit,
       f.blabel || ' ' || pg_temp.num(v.b, f.digits) || f.unit,
       pg_temp.times(v.ratio), pg_temp.times(v.lo) || '–' || pg_temp.times(v.hi), v.n
  FROM (VALUES
	(1, 1, format('new connection + first `uid_next()` (`pgbench -C`, 1 client, %s s), time a connection', :first_seconds),
	 'first', 'ms', 'member', 'uid', 'member', 'plain', 'uid', 'no registry', ' ms', 2),
	(1, 2, '… against a bare `SELECT 1` connection on the member',
	 'first', 'ms', 'member', 'uid', '`uid_next()`', 'member', 'select1', '`SELECT 1`', ' ms', 2),
	(1, 3, '… the same without a registry (what 1.x''s per-database registration costs)',
	 'first', 'ms', 'plain', 'uid', '`uid_next()`', 'plain', 'select1', '`SELECT 1`', ' ms', 2),
	(1, 4, 'backend CPU a connection, first `uid_next()`',
	 'first', 'cpu_ms', 'member', 'uid', 'member', 'plain', 'uid', 'no registry', ' ms', 2),
	(1, 5, 'backend CPU a connection, against `SELECT 1` on the member',
	 'first', 'cpu_ms', 'member', 'uid', '`uid_next()`', 'member', 'select1', '`SELECT 1`', ' ms', 2),
	(2, 1, 'race, reserve of one worker (block_size 1): the slower of two connected sessions that take their first `uid_next()` at once (it waits for a block claim if it asks before the agent, woken by the other, has leased one), against the same race with the reserve warm',
	 'claim', 'ms', 'registry', 'slow', 'size 1', 'member', 'slow', 'size 16', ' ms', 2),
	(2, 2, '… against the faster session of the same race, which took the reserve',
	 'claim', 'ms', 'registry', 'slow', 'slower', 'registry', 'fast', 'faster', ' ms', 2),
	(2, 3, '… the same race on the member (reserve warm): the slower session against the faster, what the two sessions'' contention alone costs',
	 'claim', 'ms', 'member', 'slow', 'slower', 'member', 'fast', 'faster', ' ms', 2),
	(2, 4, 'first `uid_next()` of a connected session from the reserve (the faster of a race): block_size 1 against 16',
	 'claim', 'ms', 'registry', 'fast', 'size 1', 'member', 'fast', 'size 16', ' ms', 2),
	(2, 6, 'first ID right after a restart: a new connection as soon as the server accepts one (`psql`, client clock)',
	 'cold', 'ms', 'member', 'uid', 'member', 'plain', 'uid', 'no registry', ' ms', 1),
	(3, 1, format('churn (`pgbench -C`, %s clients, %s s; one ID a connection), `uidgen.scope = backend`, time a connection', :churn_clients, :churn_seconds),
	 'churn', 'ms', 'member', 'backend', 'member', 'plain', 'backend', 'no registry', ' ms', 2),
	(3, 2, 'churn, `uidgen.scope = server`, time a connection',
	 'churn', 'ms', 'member', 'server', 'member', 'plain', 'server', 'no registry', ' ms', 2),
	(3, 3, 'churn, `uidgen.scope = backend`, backend CPU a connection',
	 'churn', 'cpu_ms', 'member', 'backend', 'member', 'plain', 'backend', 'no registry', ' ms', 2),
	(3, 4, 'churn, `uidgen.scope = server`, backend CPU a connection',
	 'churn', 'cpu_ms', 'member', 'server', 'member', 'plain', 'server', 'no registry', ' ms', 2),
	(4, 1, format('`SELECT count(uid_next()) FROM generate_series(1, %s)`, CPU a row', :id_rows),
	 'per_id', 'cpu_ns_per_row', 'member', 'uid', 'member', 'plain', 'uid', 'no registry', ' ns', 1),
	(4, 2, '… wall clock a row',
	 'per_id', 'ns_per_row', 'member', 'uid', 'member', 'plain', 'uid', 'no registry', ' ns', 1)
	) f (ord, sub, figure, sec, met, ac, ak, alabel, bc, bk, blabel, unit, digits)
 CROSS JOIN LATERAL pg_temp.vs(f.sec, f.met, f.ac, f.ak, f.bc, f.bk) v
 WHERE v.n > 0;

-- 2: one claim cycle of the registry cluster's agent, as the registry spent
-- it (pg_stat_statements: the mean of each kind of call over the run), added
-- to a warm first uid_next() of a connected session (the faster session of
-- the member's races): what a session that finds its server's reserve empty
-- would take, less the agent's wake-up and three round trips.
INSERT INTO fig
SELECT 2, 5, 'first `uid_next()` that finds the reserve empty, **estimated**: a warm one (the faster session of the member''s races) plus one claim cycle of the agent at the registry (rules, a renewal, the claim: mean execution times from `pg_stat_statements`)',
       '≈ ' || pg_temp.num(w.ms + c.ms, 2) || ' ms', 'warm ' || pg_temp.num(w.ms, 2) || ' ms',
       pg_temp.times((w.ms + c.ms) / w.ms),
       format('cycle %s ms: rules %s + renewal %s + claim %s (%s claims)', pg_temp.num(c.ms, 2), pg_temp.num(c.rules, 2),
              pg_temp.num(c.renew, 2), pg_temp.num(c.claim, 2), c.claims),
       NULL
  FROM (SELECT sum(value) AS ms, sum(value) FILTER (WHERE key = 'rules') AS rules, sum(value) FILTER (WHERE key = 'renew') AS renew,
               sum(value) FILTER (WHERE key = 'claim') AS claim, sum(param) FILTER (WHERE key = 'claim') AS claims
          FROM s WHERE section = 'agent' AND metric = 'ms') c,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS ms
          FROM s WHERE section = 'claim' AND cluster = 'member' AND key = 'fast' AND metric = 'ms') w
 WHERE c.claims > 0;

-- 4: what uid_next() adds to the bare series, per session; the difference
-- between the clusters' medians, and each one's range.
INSERT INTO fig
SELECT 4, CASE WHEN m.metric LIKE 'cpu%' THEN 3 ELSE 4 END, format('ns per ID above the bare series, %s', CASE WHEN m.metric LIKE 'cpu%' THEN 'on the CPU' ELSE 'wall clock' END),
       'member ' || pg_temp.num(m.med, 1) || ' ns', 'no registry ' || pg_temp.num(p.med, 1) || ' ns',
       CASE WHEN m.med >= p.med THEN '+' ELSE '' END || pg_temp.num(m.med - p.med, 1) || ' ns',
       format('member %s to %s, no registry %s to %s ns', pg_temp.num(m.lo, 1), pg_temp.num(m.hi, 1), pg_temp.num(p.lo, 1), pg_temp.num(p.hi, 1)),
       m.n
  FROM (SELECT cluster, metric, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS med, min(value) AS lo, max(value) AS hi, count(*) AS n
          FROM s WHERE section = 'per_id' AND metric IN ('cpu_ns_above_bare', 'ns_above_bare') GROUP BY 1, 2) m
  JOIN (SELECT cluster, metric, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS med, min(value) AS lo, max(value) AS hi
          FROM s WHERE section = 'per_id' AND metric IN ('cpu_ns_above_bare', 'ns_above_bare') GROUP BY 1, 2) p
    ON p.metric = m.metric AND p.cluster = 'plain'
 WHERE m.cluster = 'member';

\qecho '## Figures'
\qecho
\qecho 'Medians; *ratio* is the median of the per-round ratios of the two sides (same round, same race), the range its lowest and highest.'
\qecho
\qecho '| # | figure | measured | baseline (same run) | ratio | ratio, lowest–highest | pairs |'
\qecho '|---|---|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', ord, figure, measured, baseline, ratio, spread, coalesce(n::text, ''))
  FROM fig ORDER BY ord, sub;
\qecho

-- The races: how much longer the slower session took than the faster, on
-- each server (on the member both take from a warm reserve: what the two
-- sessions' contention costs), how many races show a wait, and the blocks
-- leased a race.
WITH r AS (
	SELECT x.cluster, x.round, x.param, x.value - y.value AS lag
	  FROM s x JOIN s y ON y.section = 'claim' AND y.cluster = x.cluster AND y.key = 'fast' AND y.round = x.round
	                   AND y.param = x.param AND y.metric = 'ms'
	 WHERE x.section = 'claim' AND x.key = 'slow' AND x.metric = 'ms'
), l AS (
	SELECT cluster, percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) AS lag, min(lag) AS lo, max(lag) AS hi, count(*) AS n
	  FROM r GROUP BY 1
), b AS (
	SELECT cluster, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS per_race
	  FROM s WHERE section = 'claim' AND metric = 'blocks_per_race' GROUP BY 1
)
SELECT format('Races (2): %s a round on each of the two servers: two connected sessions released together by `pg_sleep_until()`, each timing its first `uid_next()` '
              '(`SET uidgen.worker_reuse = off`, so that each takes a new worker from its server''s blocks) on the server''s clock. '
              'The slower session took a median %s ms longer than the faster on the registry cluster (block_size 1, a reserve of one worker; %s to %s ms), '
              'and %s ms on the member (block_size 16, reserve warm; %s to %s ms): '
              'the difference of the two medians, %s ms, estimates what waiting for the claim added, within this machine''s noise. '
              'In %s of the registry cluster''s %s races the slower session lagged more than in any race on the member. '
              'Blocks leased a race: %s on the registry cluster (2 expected: the slower session''s and the next reserve), %s on the member.',
              :races, pg_temp.num(g.lag, 2), pg_temp.num(g.lo, 2), pg_temp.num(g.hi, 2),
              pg_temp.num(m.lag, 2), pg_temp.num(m.lo, 2), pg_temp.num(m.hi, 2), pg_temp.num(g.lag - m.lag, 2),
              (SELECT count(*) FROM r WHERE r.cluster = 'registry' AND r.lag > m.hi), g.n,
              pg_temp.num((SELECT per_race FROM b WHERE cluster = 'registry'), 1),
              pg_temp.num((SELECT per_race FROM b WHERE cluster = 'member'), 1))
  FROM l g, l m
 WHERE g.cluster = 'registry' AND m.cluster = 'member';
\qecho
SELECT format('Per ID (4): %s sessions a round on each cluster, each timing the bare series and `uid_next()` over it (%s rows), the series first in every other session; '
              '"on the CPU" is the backend''s user and system time for the statement (`getrusage()`, as `log_statement_stats` reports it), '
              'which leaves out the time it waited for a CPU another process had.', :id_reps, :id_rows);
\qecho
