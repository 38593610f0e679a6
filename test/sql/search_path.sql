-- A search_path hijack: registration runs as the extension owner, so
-- objects that a user puts first on its search_path must take no part.
SET client_min_messages = warning;
CREATE SCHEMA evil AUTHORIZATION uidgen_user;
SET ROLE uidgen_user;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE sql AS $$ SELECT 'epoch'::timestamptz $$;
CREATE FUNCTION evil.pg_backend_pid() RETURNS int LANGUAGE sql AS $$ SELECT -1 $$;
CREATE FUNCTION evil.nextval(regclass) RETURNS bigint LANGUAGE sql AS $$ SELECT 1::bigint $$;
CREATE FUNCTION evil.always(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always);
CREATE OPERATOR evil.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.always);
CREATE TABLE evil.worker_node (id bigint, status text);
SET search_path = evil, public, pg_catalog;

SELECT uid_next() > 0 AS issued;
SELECT count(*) AS rows_in_evil_table FROM evil.worker_node;
RESET search_path;
SELECT w.status, w.pid = pg_backend_pid() AS real_pid, w.modified > now() - interval '1 hour' AS real_now,
       w.role = session_user AS role_is_session_user
  FROM uidgen.worker_node w WHERE w.id = uid_current_worker();
SELECT count(*) AS workers_holding_my_pid FROM uidgen.worker_node
 WHERE pid = pg_backend_pid() AND status = 'active';
RESET ROLE;
DROP SCHEMA evil CASCADE;
DROP ROLE uidgen_user;
