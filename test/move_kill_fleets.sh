#!/usr/bin/env bash
#
# test/move_kill_fleets.sh
#	The kill test (test/move_kill_test.sh) on the fleets of
#	test/fixtures/move_forms.sh, for test/move_kill_forms_test.sh: sourced
#	by the kill test when MOVE_FLEET names a fleet, in its own scope ($d,
#	$T, check, q and q_state are its).  It builds the fleet over the kill
#	test's own, with the kill test's shape (shards a in WAL mode and b in
#	rollback-journal mode, the moved tenant on a) but 32,000 orders of the
#	tenant, more than the move copies in one batch (25,000), so that a
#	batch starts at a row of another stored form than its id; makes the foreign
#	table's tenant column of the fleet's type, redefines tenant_rows (the
#	tenant's rows by its stored forms, byte for byte) and defines
#	fleet_checks, run at the end: every decoy's rows are those it had
#	before the first move, on its shard, and read by routed statements;
#	the tenant's rows kept their stored forms; then the tenant moves once
#	more and the fence is tried with another stored form of the tenant
#	(refused) and with a decoy (accepted).

source test/fixtures/move_forms.sh
mf_fleet "$MOVE_FLEET"
mf_build "$d" 32000 3000 DELETE
if [ "$ttype" != text ]; then
	psql -X -q -v ON_ERROR_STOP=1 >/dev/null <<SQL
DROP FOREIGN TABLE mk_orders;
CREATE FOREIGN TABLE mk_orders (tenant_id $ttype, order_id bigint,
  amount_cents bigint, status text) SERVER mkill OPTIONS (table 'orders');
SQL
fi

# tenant_rows SHARD: what SHARD holds of the tenant, by its stored forms.
tenant_rows()
{
	sq "shards/$1.db" "SELECT (SELECT count(*) || ':' || total(amount_cents)
	  FROM orders WHERE $t_orders) || ' ' || (SELECT count(*) || ':' ||
	  total(order_id) FROM items WHERE $t_items)"
}

decoy_ref=$(mf_decoys "$d" mk_orders)
forms_ref=$(mf_forms "$d/shards/a.db")

# fleet_checks: run after the kill test's own, the tenant on shard $to.
fleet_checks()
{
	local e id shard form
	check "$MOVE_FLEET: the decoys' rows are untouched, on their shards, and routed" \
		"$decoy_ref" "$(mf_decoys "$d" mk_orders)"
	check "$MOVE_FLEET: the tenant's rows kept their stored forms" "$forms_ref" \
		"$(mf_forms "$d/shards/$to.db")"
	check "$MOVE_FLEET: one more move" ok \
		"$(q_state "SELECT tenant_move('mkill', '$T', '$from')")"
	check "$MOVE_FLEET: the fence on shard $to refuses the tenant stored as $other_form" \
		"tenant \"$T\" has moved to shard \"$from\": write it there" \
		"$(sqlite3 "$d/shards/$to.db" ".timeout 2000" \
			"INSERT INTO orders VALUES ($other_form, 999999, 1, 'fenced')" 2>&1 |
			sed -E 's/^(Runtime error|Error)[^:]*: //; s/^stepping, //; s/ \([0-9]+\)$//')"
	for e in $decoys; do
		id=${e%%:*}
		shard=${e##*:}
		[ "$shard" = "$to" ] || continue
		form=$(mf_decoy_cond "$id")
		form=${form#tenant_id = }
		form=${form% COLLATE BINARY}
		check "$MOVE_FLEET: the fence on shard $to lets decoy $id write" "1" \
			"$(sq "shards/$to.db" "INSERT INTO orders VALUES ($form, 999999, 1, 'app');
			  SELECT changes(); DELETE FROM orders WHERE order_id = 999999")"
	done
	check "$MOVE_FLEET: the last cleanup" ok \
		"$(q_state "SELECT * FROM tenant_cleanup('mkill', '$T')")"
	check "$MOVE_FLEET: after it, every row is counted once" "$fleet_ref" \
		"$(q "SELECT count(*) || ':' || sum(amount_cents) FROM mk_orders")"
	check "$MOVE_FLEET: after it, the decoys' rows are still untouched" \
		"$decoy_ref" "$(mf_decoys "$d" mk_orders)"
	check "$MOVE_FLEET: after it, shard $from holds the tenant's rows in their forms" \
		"$forms_ref" "$(mf_forms "$d/shards/$from.db")"
	check "$MOVE_FLEET: after it, shard $to holds none" "0:0.0 0:0.0" \
		"$(tenant_rows "$to")"
}
