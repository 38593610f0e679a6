-- Installation: objects, their markings, and the default layout.
CREATE EXTENSION uidgen;

-- A helper for the other tests: runs a statement and reports its outcome
-- as SQLSTATE, message (and detail, if asked) and hint, so that expected
-- files show error codes without file and line numbers.
CREATE SCHEMA regress;
CREATE FUNCTION regress.try(sql text, with_detail boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	state text;
	message text;
	detail text;
	hint text;
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
	                        hint = PG_EXCEPTION_HINT;
	RETURN state || ': ' || message
	       || CASE WHEN with_detail AND detail <> '' THEN E'\nDETAIL: ' || detail ELSE '' END
	       || CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END;
END
$$;
GRANT USAGE ON SCHEMA regress TO PUBLIC;

-- Every function declares volatility, strictness and parallel safety.
SELECT p.oid::regprocedure AS function, p.provolatile AS volatility, p.proisstrict AS strict,
       p.proparallel AS parallel, p.prosecdef AS security_definer
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'uidgen'
 ORDER BY p.oid::regprocedure::text COLLATE "C";

-- The catalog tables, and what pg_dump will save of them.
SELECT unnest(extconfig)::regclass AS relation, unnest(extcondition) AS dump_filter
  FROM pg_extension WHERE extname = 'uidgen';

-- UidGenerator's WORKER_NODE columns come first, in PostgreSQL types.
SELECT attnum, attname, format_type(atttypid, atttypmod) AS type, attnotnull
  FROM pg_attribute
 WHERE attrelid = 'uidgen.worker_node'::regclass AND attnum > 0
 ORDER BY attnum;

-- The default layout: 41-bit milliseconds since 2026 UTC, 13-bit worker, 9-bit sequence.
SELECT time_bits, worker_bits, seq_bits, epoch AT TIME ZONE 'UTC' AS epoch_utc, unit, unused_bits,
       max_worker_id, ids_per_unit, ids_per_second, exhausted_at AT TIME ZONE 'UTC' AS exhausted_utc,
       years_left BETWEEN 60 AND 70 AS years_left_ok, configurable
  FROM uid_layout();

-- The GUCs exist, with their defaults, and the prefix is reserved.
SELECT name, setting, unit, context, vartype
  FROM pg_settings WHERE name LIKE 'uidgen.%' ORDER BY name;
SELECT regress.try('SET uidgen.no_such_setting = 1');
