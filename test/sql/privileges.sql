-- An ordinary role generates and decodes; only the owner configures and writes the worker table.
SET client_min_messages = warning;
CREATE ROLE uidgen_user LOGIN;
CREATE TABLE owned_by_user (id bigint PRIMARY KEY DEFAULT uid_next(), note text);
ALTER TABLE owned_by_user OWNER TO uidgen_user;

SET ROLE uidgen_user;
INSERT INTO owned_by_user (note) VALUES ('a'), ('b');
SELECT count(DISTINCT id) AS ids, bool_and(uid_worker_id(id) = uid_current_worker()) AS own_worker
  FROM owned_by_user;
SELECT count(*) > 0 AS can_read_worker_table FROM uidgen.worker_node;
SELECT time_bits FROM uid_layout();
SELECT regress.try('SELECT uid_configure()');
SELECT regress.try('SELECT uid_reclaim_workers(interval ''10 s'')');
SELECT regress.try('SELECT uid_reach()');
SELECT regress.try('SELECT uid_adopt_reach(0)');
SELECT regress.try('SELECT uid_registry_leave()');
SELECT regress.try('UPDATE uidgen.worker_node SET status = ''released''');
SELECT regress.try('DELETE FROM uidgen.worker_node');
SELECT regress.try('INSERT INTO uidgen.config VALUES (true, 1, 1, 1, now(), ''second'')');
SELECT regress.try('UPDATE uidgen.config SET time_bits = 40');
SELECT regress.try($$SELECT setval('uidgen.worker_node_id_seq', 1)$$);
SELECT regress.try('SELECT nextval(''uidgen.worker_node_id_seq'')');
SELECT regress.try('SELECT uidgen.config_restore()');

RESET ROLE;
DROP TABLE owned_by_user;
