-- af 0.1: run saved libaf graphs. docs/PLUGIN_HOSTS.md in libaf's repository.
\echo Use "CREATE EXTENSION af" to load this file. \quit

-- One run of a graph on one input (a JSON array of the program's positional
-- inputs); the output as jsonb. options: {"timeout_ms": N}. A NULL graph or
-- input gives NULL.
CREATE FUNCTION af_run(graph bytea, input jsonb, options jsonb DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'af_run_bytea'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

-- The same with the graph read from a file of the server (needs the
-- privileges of pg_read_server_files).
CREATE FUNCTION af_run(graph_path text, input jsonb, options jsonb DEFAULT NULL)
RETURNS jsonb AS 'MODULE_PATHNAME', 'af_run_path'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

-- af_run_agg: the group's rows as ONE batched run (the per-item graph is
-- batched at first use), a jsonb array of the outputs in the order the rows
-- reached the aggregate (af_run_agg(graph, input ORDER BY ...) to choose);
-- an item that fails is {"error": {"code", "name", "message"}}.
CREATE FUNCTION af_run_agg_step(internal, bytea, jsonb)
RETURNS internal AS 'MODULE_PATHNAME', 'af_run_agg_step'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
CREATE FUNCTION af_run_agg_step(internal, bytea, jsonb, jsonb)
RETURNS internal AS 'MODULE_PATHNAME', 'af_run_agg_step'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
CREATE FUNCTION af_run_agg_final(internal)
RETURNS jsonb AS 'MODULE_PATHNAME', 'af_run_agg_final'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;

CREATE AGGREGATE af_run_agg(graph bytea, input jsonb) (
  SFUNC = af_run_agg_step, STYPE = internal, FINALFUNC = af_run_agg_final);
CREATE AGGREGATE af_run_agg(graph bytea, input jsonb, options jsonb) (
  SFUNC = af_run_agg_step, STYPE = internal, FINALFUNC = af_run_agg_final);
