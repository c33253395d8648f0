// One node's features (GraphStore.node_features: explain after a maxmargin run weighs the
// support vectors at them), found by its primary key uid ("dataset:key"): a lookup.
MATCH (e:Entity {uid: $uid})
RETURN e.features AS features
