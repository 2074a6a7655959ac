-- test/regress_state.sql
--	regress_state(statement): run a statement; 'ok', or the SQLSTATE and
--	message of its error.  Included by the suites that check refusals
--	(\i test/regress_state.sql); they drop it at the end.
CREATE FUNCTION regress_state(query text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  state text;
  msg text;
BEGIN
  EXECUTE query;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN state || ': ' || msg;
END $$;
