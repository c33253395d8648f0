// Every node's given label and latest prediction, for export and review
// (GraphStore.read_export): one row holding a list per node, in EXPORT_SCHEMA's order (a
// list keeps its nulls, where collect() of a column would drop them), keyless nodes left
// out. label_scores' class order is that of the node's run (LabelRun.classes).
MATCH (e:${node_label})
WHERE ${e_in_dataset} AND e.${key} IS NOT NULL
RETURN collect([e.${key}, toString(e.${given_label}), toString(e.${predicted_label}), e.${label_confidence},
                e.${label_scores}, e.${label_runner_up}, e.${label_margin}, e.${label_noise},
                e.${label_noise_score}, e.${label_run_id}, e.${label_solver}, e.${labelled_at},
                e.${label_accepted}]) AS rows
