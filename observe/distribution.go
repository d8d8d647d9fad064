package observe

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pgceiling/pgceiling/result"
)

// distribution reads whether and how pgceiling's tables are sharded. Without the citus
// extension it returns a Distribution with no version (not distributed), reading no
// pg_dist_* catalog, so it never fails on plain PostgreSQL. With Citus it counts the
// active nodes (pg_dist_node), reads citus.propagate_set_commands, and lists pgceiling's top-level tables: each one's Citus
// type, distribution column, colocation group, shards, the nodes holding them, and its
// heap and index bytes summed over every shard (and partition, for transactions).
func distribution(ctx context.Context, q Querier) (*result.Distribution, error) {
	d := &result.Distribution{}
	err := q.QueryRow(ctx, `SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'citus'`).Scan(&d.Citus)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("disclose: look for the citus extension: %w", err)
	}
	if err := q.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE groupid <> 0),
		count(*) FILTER (WHERE shouldhaveshards),
		coalesce(current_setting('citus.propagate_set_commands', true), '')
		FROM pg_catalog.pg_dist_node WHERE isactive AND noderole = 'primary'`).Scan(&d.Workers, &d.Nodes, &d.PropagateSetCommands); err != nil {
		return nil, fmt.Errorf("disclose: Citus nodes: %w", err)
	}
	rows, err := q.Query(ctx, distributionSQL)
	if err != nil {
		return nil, fmt.Errorf("disclose: Citus tables: %w", err)
	}
	d.Tables, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (result.DistributedTable, error) {
		var t result.DistributedTable
		var method, repmodel string
		err := r.Scan(&t.Name, &method, &repmodel, &t.Column, &t.ColocationID, &t.Shards, &t.ShardNodes, &t.HeapBytes, &t.IndexBytes)
		t.Type = citusType(method, repmodel)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("disclose: Citus tables: %w", err)
	}
	return d, nil
}

// distributionSQL lists pgceiling's top-level tables with their Citus metadata; a table
// Citus does not know has an empty method. Sizes come from citus_table_size and
// citus_total_relation_size on each leaf (a partitioned table's shards hold no rows).
const distributionSQL = `
SELECT c.relname::text,
       coalesce(p.partmethod::text, ''),
       coalesce(p.repmodel::text, ''),
       coalesce(CASE WHEN p.partkey IS NOT NULL THEN pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) END, ''),
       coalesce(p.colocationid, 0)::int,
       (SELECT count(*) FROM pg_catalog.pg_dist_shard s WHERE s.logicalrelid = c.oid)::int,
       (SELECT count(DISTINCT pl.groupid) FROM pg_catalog.pg_dist_shard s
           JOIN pg_catalog.pg_dist_placement pl ON pl.shardid = s.shardid
           WHERE s.logicalrelid = c.oid)::int,
       coalesce(sum(pg_catalog.citus_table_size(l.relid)), 0)::bigint,
       coalesce(sum(pg_catalog.citus_total_relation_size(l.relid) - pg_catalog.citus_table_size(l.relid)), 0)::bigint
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_dist_partition p ON p.logicalrelid = c.oid
LEFT JOIN LATERAL (
    SELECT t.relid FROM pg_catalog.pg_partition_tree(c.oid) t
    WHERE p.logicalrelid IS NOT NULL AND t.isleaf AND c.relkind = 'p'
    UNION ALL SELECT c.oid::regclass WHERE p.logicalrelid IS NOT NULL AND c.relkind = 'r') l ON true
WHERE n.nspname = 'pgceiling' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
GROUP BY c.oid, c.relname, p.logicalrelid, p.partmethod, p.repmodel, p.partkey, p.colocationid
ORDER BY c.relname`

// citusType names a table's Citus type from pg_dist_partition's partmethod and repmodel.
func citusType(method, repmodel string) string {
	switch {
	case method == "":
		return result.DistLocal
	case method == "h":
		return result.DistHash
	case method == "n" && repmodel == "t":
		return result.DistReference
	case method == "n":
		return "citus local"
	}
	return "method " + method
}
