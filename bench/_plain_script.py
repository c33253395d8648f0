"""The peer of bench/e2e.py: what a practitioner writes instead of adopting graphlabel, on the
same Parquet file (python bench/_plain_script.py IN.parquet OUT.parquet [M]):

read the file, faiss ``IndexHNSWFlat`` (M links, default 16; efConstruction and efSearch at
faiss's defaults) 10-NN on the raw features, Gaussian weights with σ the mean distance to
the 10th neighbour, max-symmetrised, scikit-learn's ``LabelSpreading`` (α = 0.99, up to
1,000 iterations) on that graph, write one predicted label per row. No store, no noise
flags, no record of the run. Prints its own seconds per step on stderr."""

import sys
import time

import faiss
import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.semi_supervised import LabelSpreading

K = 10
start = time.perf_counter()
frame = pd.read_parquet(sys.argv[1])
X = np.ascontiguousarray(frame.filter(regex=r"^x\d+$").to_numpy(), dtype=np.float32)
index = faiss.IndexHNSWFlat(X.shape[1], int(sys.argv[3]) if len(sys.argv) > 3 else 16)
index.add(X)
squared, neighbours = index.search(X, K + 1)
squared, neighbours = squared[:, 1:], neighbours[:, 1:]  # the first is the row itself
sigma = float(np.sqrt(np.maximum(squared[:, -1], 0)).mean())
rows = np.repeat(np.arange(len(X)), K)
A = sp.csr_matrix((np.exp(-squared.ravel() / (2 * sigma**2)), (rows, neighbours.ravel())), shape=(len(X),) * 2)
W = A.maximum(A.T).tocsr()
graph = time.perf_counter()
classes, codes = np.unique(frame["label"].dropna().to_numpy(dtype=str), return_inverse=True)
y = np.full(len(frame), -1)
y[frame["label"].notna().to_numpy()] = codes
model = LabelSpreading(kernel=lambda a, b: W, alpha=0.99, max_iter=1000).fit(X, y)
spread = time.perf_counter()
pd.DataFrame({"key": frame["key"], "predicted_label": classes[model.transduction_]}).to_parquet(sys.argv[2])
print(f"graph {graph - start:.1f} s, spreading {spread - graph:.1f} s, written {time.perf_counter() - spread:.1f} s",
      file=sys.stderr)
