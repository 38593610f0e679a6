-- test/bench/report-common.sql: what the report scripts share (\ir from
-- scope-report.sql, registry-report.sql and durable-report.sql): psql's
-- output as bare Markdown lines, and the formats of a figure and a ratio.

\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
\pset footer off
SET client_min_messages = warning;

-- x rounded to digits, with thousands separators; n/a for NULL.
CREATE FUNCTION pg_temp.num(x float8, digits int) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(to_char(round(x::numeric, digits), 'FM999,999,999,990' || CASE WHEN digits > 0 THEN '.' || repeat('0', digits) ELSE '' END), 'n/a') $$;
-- A ratio: 1.05×.
CREATE FUNCTION pg_temp.times(x float8) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT coalesce(round(x::numeric, 2)::text || '×', 'n/a') $$;
