-- test/bench/durable-report.sql: turns durable.sh's samples into the
-- Markdown tables of its report (printed) and the data files of durable.gp
-- (written into :dir).
--
-- Every figure is a median over the run's rounds; every ratio to identity is
-- the median of each round's ratio, both measured in the same round, so that
-- a change of the machine's load between rounds falls on both.  Run by
-- durable.sh:
--   psql -v samples=FILE -v dir=DIR -v schemes='identity uid_backend ...' -f durable-report.sql

\ir report-common.sql

CREATE TEMP TABLE s (
	section text NOT NULL,		-- insert (a window), final (the end of the run)
	scheme  text NOT NULL,		-- identity, uid_backend, uid_server, uuid, uuidv7, snowflake
	batch   int NOT NULL,		-- rows a transaction
	clients int NOT NULL,
	metric  text NOT NULL,
	round   int NOT NULL,
	value   float8 NOT NULL
);
-- The server reads the file: the cluster runs as the user who runs durable.sh.
COPY s FROM :'samples';

-- The schemes in the order of the run, with the names the report gives them.
CREATE TEMP TABLE scheme AS
SELECT name, ord, CASE name
		WHEN 'identity' THEN 'identity'
		WHEN 'uid_backend' THEN 'uidgen, scope backend'
		WHEN 'uid_server' THEN 'uidgen, scope server'
		WHEN 'uuid' THEN 'gen_random_uuid()'
		WHEN 'uuidv7' THEN 'uuidv7()'
		WHEN 'snowflake' THEN 'pgEdge snowflake'
		ELSE name END AS label
  FROM unnest(string_to_array(:'schemes', ' ')) WITH ORDINALITY AS u (name, ord);

CREATE FUNCTION pg_temp.mark(ok boolean) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT CASE WHEN ok THEN '**met**' WHEN NOT ok THEN '**missed**' ELSE 'n/a' END $$;
CREATE FUNCTION pg_temp.workload(clients int, batch int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT format('%s client%s × %s row%s', clients, CASE WHEN clients > 1 THEN 's' ELSE '' END, batch, CASE WHEN batch > 1 THEN 's' ELSE '' END) $$;

-- Each scheme's figure and its ratio to identity, round by round.
CREATE TEMP VIEW fig AS
SELECT x.scheme, x.batch, x.clients, x.metric,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY x.value) AS value,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY x.value / nullif(i.value, 0)) AS ratio,
       min(x.value / nullif(i.value, 0)) AS ratio_min, max(x.value / nullif(i.value, 0)) AS ratio_max,
       count(*) AS rounds
  FROM s x
  LEFT JOIN s i ON i.section = x.section AND i.scheme = 'identity' AND i.batch = x.batch
               AND i.clients = x.clients AND i.metric = x.metric AND i.round = x.round
 WHERE x.section = 'insert'
 GROUP BY 1, 2, 3, 4;

CREATE TEMP VIEW final AS
SELECT x.scheme, x.metric, x.value, x.value / nullif(i.value, 0) AS ratio
  FROM s x
  LEFT JOIN s i ON i.section = 'final' AND i.scheme = 'identity' AND i.metric = x.metric
 WHERE x.section = 'final';

-- One row a (workload, scheme), the figures side by side.
CREATE TEMP VIEW wide AS
SELECT w.batch, w.clients, c.name AS scheme, c.ord, c.label,
       max(f.value) FILTER (WHERE f.metric = 'tps') AS tps,
       max(f.ratio) FILTER (WHERE f.metric = 'tps') AS tps_ratio,
       max(f.ratio_min) FILTER (WHERE f.metric = 'tps') AS tps_ratio_min,
       max(f.ratio_max) FILTER (WHERE f.metric = 'tps') AS tps_ratio_max,
       max(f.value) FILTER (WHERE f.metric = 'rows_per_s') AS rows_per_s,
       max(f.value) FILTER (WHERE f.metric = 'cpu_us_per_row') AS cpu,
       max(f.ratio) FILTER (WHERE f.metric = 'cpu_us_per_row') AS cpu_ratio,
       max(f.value) FILTER (WHERE f.metric = 'p50_ms') AS p50,
       max(f.value) FILTER (WHERE f.metric = 'p99_ms') AS p99,
       max(f.ratio) FILTER (WHERE f.metric = 'p99_ms') AS p99_ratio,
       max(f.value) FILTER (WHERE f.metric = 'wal_bytes_per_row') AS wal,
       max(f.ratio) FILTER (WHERE f.metric = 'wal_bytes_per_row') AS wal_ratio,
       max(f.value) FILTER (WHERE f.metric = 'fpi_per_1000_rows') AS fpi,
       max(f.ratio) FILTER (WHERE f.metric = 'fpi_per_1000_rows') AS fpi_ratio,
       max(f.value) FILTER (WHERE f.metric = 'checkpoints') AS checkpoints,
       max(f.value) FILTER (WHERE f.metric = 'added_leaf_density') AS added_density,
       max(f.value) FILTER (WHERE f.metric = 'leaf_pages_added') AS pages_added,
       max(f.value) FILTER (WHERE f.metric = 'index_bytes_per_row') AS index_per_row,
       max(f.ratio) FILTER (WHERE f.metric = 'index_bytes_per_row') AS index_per_row_ratio,
       max(f.rounds) FILTER (WHERE f.metric = 'tps') AS rounds
  FROM (SELECT DISTINCT batch, clients FROM s WHERE section = 'insert') w
 CROSS JOIN scheme c
  LEFT JOIN fig f ON f.scheme = c.name AND f.batch = w.batch AND f.clients = w.clients
 GROUP BY 1, 2, 3, 4, 5;

\qecho '## Summary'
\qecho
\qecho 'Insert throughput (rows/s) as a ratio to identity in the same round, medians over the rounds; WAL, full-page images and the primary key''s bytes a row at the end of the run beside it (its tables hold different numbers of rows then).'
\qecho
SELECT '| scheme | ' || string_agg(pg_temp.workload(clients, batch), ' | ' ORDER BY batch, clients)
       || ' | WAL bytes a row, 8 clients × 1 row | FPI per 1,000 rows, 8 clients × 1 row | PK bytes a row at the end | PK leaf density at the end |'
  FROM (SELECT DISTINCT batch, clients FROM s WHERE section = 'insert') w;
SELECT '|---|' || string_agg('---:|', '' ORDER BY batch, clients) || '---:|---:|---:|---:|'
  FROM (SELECT DISTINCT batch, clients FROM s WHERE section = 'insert') w;
SELECT format('| %s | %s | %s | %s | %s | %s |', w.label,
              string_agg(CASE WHEN w.scheme = 'identity' THEN pg_temp.num(w.rows_per_s, 0) || ' rows/s'
                              ELSE pg_temp.times(w.tps_ratio) END, ' | ' ORDER BY w.batch, w.clients),
              max(pg_temp.num(e.wal, 0) || CASE WHEN w.scheme <> 'identity' THEN ' (' || pg_temp.times(e.wal_ratio) || ')' ELSE '' END),
              max(pg_temp.num(e.fpi, 1)),
              (SELECT pg_temp.num(value, 1) || CASE WHEN w.scheme <> 'identity' THEN ' (' || pg_temp.times(ratio) || ')' ELSE '' END
                 FROM final WHERE scheme = w.scheme AND metric = 'index_bytes_per_row'),
              (SELECT pg_temp.num(value, 1) || ' %' FROM final WHERE scheme = w.scheme AND metric = 'leaf_density'))
  FROM wide w
  LEFT JOIN wide e ON e.scheme = w.scheme AND e.clients = 8 AND e.batch = 1
 GROUP BY w.scheme, w.ord, w.label
 ORDER BY w.ord;
\qecho
\qecho 'Backend CPU time a row as a ratio to identity''s in the same round: what the server''s processes spent, which the waits for a shared disk hardly change.'
\qecho
SELECT '| scheme | ' || string_agg(pg_temp.workload(clients, batch), ' | ' ORDER BY batch, clients) || ' |'
  FROM (SELECT DISTINCT batch, clients FROM s WHERE section = 'insert') w;
SELECT '|---|' || string_agg('---:|', '' ORDER BY batch, clients)
  FROM (SELECT DISTINCT batch, clients FROM s WHERE section = 'insert') w;
SELECT format('| %s | %s |', label,
              string_agg(CASE WHEN scheme = 'identity' THEN pg_temp.num(cpu, 1) || ' µs'
                              ELSE pg_temp.times(cpu_ratio) END, ' | ' ORDER BY batch, clients))
  FROM wide GROUP BY scheme, ord, label ORDER BY ord;
\qecho

-- The targets that concern inserts (issue 36 and scope.sh's), under
-- durability: uidgen's tps within 5 % of identity at every workload, and
-- the leaf density 8 clients inserting 100 rows a transaction leave.
CREATE TEMP TABLE target (ord int, target text, measured text, ok boolean);
INSERT INTO target
SELECT 1, format('%s: insert tps ≥ 0.95× identity at every workload', label),
       format('lowest %s (%s)', pg_temp.times(min(tps_ratio)),
              (array_agg(pg_temp.workload(clients, batch) ORDER BY tps_ratio))[1]),
       min(tps_ratio) >= 0.95
  FROM wide WHERE scheme IN ('uid_backend', 'uid_server')
 GROUP BY scheme, label;
INSERT INTO target
SELECT 2, format('%s: 8 clients × 100 rows leave the leaf space they add ≥ %s %% full', label,
                 CASE scheme WHEN 'uid_server' THEN 88 ELSE 85 END),
       format('%s %% (identity %s %%)', pg_temp.num(added_density, 1),
              (SELECT pg_temp.num(i.added_density, 1) FROM wide i WHERE i.scheme = 'identity' AND i.clients = 8 AND i.batch = 100)),
       added_density >= CASE scheme WHEN 'uid_server' THEN 88 ELSE 85 END
  FROM wide WHERE scheme IN ('uid_backend', 'uid_server') AND clients = 8 AND batch = 100;

\qecho '## Targets'
\qecho
\qecho '| target | measured | |'
\qecho '|---|---:|---|'
SELECT format('| %s | %s | %s |', target, measured, pg_temp.mark(ok)) FROM target ORDER BY ord, target;
\qecho

\qecho '## Throughput and latency'
\qecho
\qecho 'tps and rows/s of each window (pgbench), the ratio of rows/s to identity''s in the same round (median, and the lowest and highest of the rounds), the CPU time the window''s backends spent a row (as the postmaster collects it when they end: neither the checkpointer''s, the WAL writer''s nor a keeper''s), and the latency of a transaction from pgbench''s per-transaction log.'
\qecho
\qecho '| workload | scheme | tps | rows/s | × identity | lowest–highest | backend CPU µs a row | × identity | p50 ms | p99 ms | p99 × identity |'
\qecho '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s–%s | %s | %s | %s | %s | %s |', pg_temp.workload(clients, batch), label,
              pg_temp.num(tps, 0), pg_temp.num(rows_per_s, 0), pg_temp.times(tps_ratio),
              pg_temp.times(tps_ratio_min), pg_temp.times(tps_ratio_max),
              pg_temp.num(cpu, 1), pg_temp.times(cpu_ratio),
              pg_temp.num(p50, 2), pg_temp.num(p99, 2), pg_temp.times(p99_ratio))
  FROM wide WHERE tps IS NOT NULL ORDER BY batch, clients, ord;
\qecho

\qecho '## WAL and full-page images'
\qecho
\qecho 'WAL bytes a row (the WAL position''s advance over the window, every process''s records, full-page images and checkpoints'' own included, over the rows inserted), full-page images per 1,000 rows (`pg_stat_wal.wal_fpi`), and the checkpoints that completed in the window (the server''s count).'
\qecho
\qecho '| workload | scheme | WAL bytes a row | × identity | FPI per 1,000 rows | × identity | checkpoints |'
\qecho '|---|---|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s | %s |', pg_temp.workload(clients, batch), label,
              pg_temp.num(wal, 0), pg_temp.times(wal_ratio), pg_temp.num(fpi, 1), pg_temp.times(fpi_ratio),
              pg_temp.num(checkpoints, 0))
  FROM wide WHERE tps IS NOT NULL ORDER BY batch, clients, ord;
\qecho

\qecho '## Primary key'
\qecho
\qecho 'What each window did to the primary key (`pgstatindex` before and after): the bytes the index grew by a row inserted, the leaf pages it added, and how full that leaf space is (its rows'' leaf tuples, 20 bytes for a bigint and 28 for a uuid with their line pointers, over the space of the leaf pages added; a random key also fills pages that were there, so its figure is its steady state; a window that adds a few pages gives a coarse figure). Then each primary key at the end of the run.'
\qecho
\qecho '| workload | scheme | index growth, bytes a row | × identity | leaf pages added | leaf space added, % full |'
\qecho '|---|---|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s | %s | %s | %s |', pg_temp.workload(clients, batch), label,
              pg_temp.num(index_per_row, 1), pg_temp.times(index_per_row_ratio), pg_temp.num(pages_added, 0),
              pg_temp.num(added_density, 1))
  FROM wide WHERE tps IS NOT NULL ORDER BY batch, clients, ord;
\qecho
\qecho '| scheme | rows | table | primary key | × identity | PK bytes a row | leaf density | leaf fragmentation |'
\qecho '|---|---:|---:|---:|---:|---:|---:|---:|'
SELECT format('| %s | %s | %s MiB | %s MiB | %s | %s | %s %% | %s %% |', c.label,
              pg_temp.num(max(value) FILTER (WHERE metric = 'rows'), 0),
              pg_temp.num(max(value) FILTER (WHERE metric = 'table_bytes') / 1048576, 1),
              pg_temp.num(max(value) FILTER (WHERE metric = 'index_bytes') / 1048576, 1),
              pg_temp.times(max(ratio) FILTER (WHERE metric = 'index_bytes')),
              pg_temp.num(max(value) FILTER (WHERE metric = 'index_bytes_per_row'), 1),
              pg_temp.num(max(value) FILTER (WHERE metric = 'leaf_density'), 1),
              pg_temp.num(max(value) FILTER (WHERE metric = 'leaf_fragmentation'), 1))
  FROM final f JOIN scheme c ON c.name = f.scheme
 GROUP BY c.name, c.ord, c.label ORDER BY c.ord;
\qecho

-- ---- the data files of durable.gp ------------------------------------------
-- A row a workload, a column a scheme (the header names them); identity is
-- left out of the ratios, whose identity is 1 by definition.

SELECT set_config('durable.dir', :'dir', false) \g /dev/null
DO $$
DECLARE
	f record;
	cols text;
BEGIN
	FOR f IN SELECT * FROM (VALUES ('tps_ratio', false), ('cpu_ratio', false), ('p99_ratio', false), ('wal', true),
	                               ('fpi', true), ('index_per_row', true), ('added_density', true)) AS v (col, with_identity) LOOP
		SELECT string_agg(format('max(%I) FILTER (WHERE scheme = %L) AS %I', f.col, name, label), ', ' ORDER BY ord)
		  INTO cols FROM scheme WHERE f.with_identity OR name <> 'identity';
		EXECUTE format('COPY (SELECT format(''%%s×%%s'', clients, batch) AS workload, %s FROM wide GROUP BY batch, clients ORDER BY batch, clients)
		                TO %L WITH (FORMAT text, HEADER, NULL '''')',
		               cols, current_setting('durable.dir') || '/' || f.col || '.dat');
	END LOOP;
	-- A row a scheme: its primary key at the end, bytes a row and leaf density.
	EXECUTE format('COPY (SELECT c.label, max(value) FILTER (WHERE metric = ''index_bytes_per_row''),
	                             max(value) FILTER (WHERE metric = ''leaf_density'')
	                        FROM final f JOIN scheme c ON c.name = f.scheme GROUP BY c.label, c.ord ORDER BY c.ord)
	                TO %L WITH (FORMAT text)', current_setting('durable.dir') || '/final.dat');
END
$$;
