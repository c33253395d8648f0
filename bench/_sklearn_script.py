"""The peer of bench/cli.py: what a data scientist writes instead of graphlabel, a plain
scikit-learn script that reads the same CSV, spreads its labels over a 10-NN graph and
writes one prediction per row (python bench/_sklearn_script.py IN.csv OUT.csv)."""

import sys

import numpy as np
import pandas as pd
from sklearn.semi_supervised import LabelSpreading

frame = pd.read_csv(sys.argv[1])
features = frame.filter(like="x_").to_numpy()
classes, codes = np.unique(frame["label"].dropna(), return_inverse=True)
y = np.full(len(frame), -1)
y[frame["label"].notna().to_numpy()] = codes
model = LabelSpreading(kernel="knn", n_neighbors=10).fit(features, y)
frame["predicted_label"] = classes[model.transduction_]
frame["label_confidence"] = model.label_distributions_.max(axis=1)
frame[["key", "predicted_label", "label_confidence"]].to_csv(sys.argv[2], index=False)
