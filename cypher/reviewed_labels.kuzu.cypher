// The given labels a reviewer vouched for (review's accept or correct: label_accepted) that
// the nodes still give, by key. Ingest reads them before and after a file: a key missing
// after it is a reviewed label the file replaced, which it says (the file wins).
MATCH (e:Entity)
WHERE e.dataset = $dataset AND e.label_accepted IS NOT NULL AND e.given_label = e.label_accepted
RETURN e.key AS key, e.label_accepted AS label
