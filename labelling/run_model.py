"""The max-margin model a run keeps: arrays and parameters, never a pickle.

A ``maxmargin`` run (``solvers.maxmargin``, Kveton et al. 2010, Sec. 3 eq. 7-8) ends with a
kernel SVM that labels feature vectors the graph never saw. ``RunModel`` is that SVM as
arrays (support vectors, dual coefficients, intercepts, the classes) plus its kernel
parameters and the calibration temperature, so that ``graphlabel predict`` labels new
records and ``graphlabel explain`` shows a node's support vectors, both without
scikit-learn: this module imports numpy and ``labelling.feature_columns`` only (``explain``
stays under a second, bench/cli.py).

Decisions
---------
- Arrays, not a pickle: a pickled ``SVC`` runs arbitrary code when loaded and breaks when
  scikit-learn changes its private attributes; libsvm's model is fully given by its public
  ``support_vectors_``, ``dual_coef_``, ``intercept_``, ``n_support_`` (scikit-learn's
  "SVC: mathematical formulation" and "multi-class classification" sections), and the
  decision values are recomputed from them here. ``tests/test_run_model.py`` checks
  them against the fitted SVC's own ``decision_function`` and ``predict`` on digits and
  wine.
- Format: ``numpy.savez`` with ``allow_pickle=False`` on load (strings as fixed-width
  unicode arrays), with ``FORMAT_VERSION``; a model of another version is refused with
  one line (``ModelVersionError``), never read half right.
- The vocabulary of each categorical column (``vocabulary``, in the header) is kept: the
  SVM's features end with those columns' one-hot (``labelling.problems.problem_features``),
  so ``predict`` encodes new records with the run's own vocabulary, and a value it does not
  hold rejects that record with its reason rather than shifting the columns. A model
  stored before the field existed reads as one without categorical columns (the field
  is additive: same format version).
- The numeric features' scaling (``scale_center``, ``scale_width``, in the header): the
  SVM was fitted on the features scaled as the run's graph measured distances
  (``labelling.problems.numeric_scaling``), so ``predict`` and ``explain`` scale a record's
  numeric features the same way (``encode``) before the kernel. Empty: as stored (a model
  kept before the field existed, or a graph built with ``scale="none"``). Additive too.
- The feature columns by name (``feature_columns``, in the header: the dataset's record,
  ``labelling.feature_columns``) are kept, so that ``predict`` reads a file's columns by
  name, in the model's order, and refuses other ones; a model stored before the field
  existed, or of a dataset ingested before the record existed, has none, and ``predict``
  then checks the count only. Additive too.
- The support vectors' keys (``support_keys``) are kept so that ``explain`` can name them;
  a support vector that is no stored node (an incremental run's class anchor) has the
  key ``""``.
- Labels: libsvm's one-vs-one vote (ties to the lower class, as libsvm breaks them) for
  more than two classes, the sign of f for two (eq. 8; f = 0 is the second class, as in
  libsvm), as ``MaxMarginGraphCut.predict``;
  probabilities are the softmax of the per-class scores over the stored temperature
  (1 when the run was not calibrated), as ``MaxMarginGraphCut.predict_proba``.

References
----------
Kveton, B., Valko, M., Rahimi, A., Huang, L. (2010). Semi-supervised learning with max-margin
graph cuts. AISTATS. Sec. 3 eq. (7)-(8).
Chang, C.-C., Lin, C.-J. (2011). LIBSVM: a library for support vector machines. ACM TIST
2(3). Sec. 7 (one-against-one multi-class, the voting rule).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .feature_columns import FeatureColumns

if TYPE_CHECKING:
    from graphstore import GraphStore
    from solvers import Prediction

    from .problems import ExportedProblem

#: The layout of ``RunModel.to_bytes``; a stored model of another version is refused.
FORMAT_VERSION = 1
FORMAT_NAME = "graphlabel-maxmargin"
KERNELS = ("linear", "rbf", "poly")
#: Rows per kernel block in ``predict_with_proba``: the kernel matrix is rows × support vectors
#: of float64, and the rbf kernel makes three such temporaries (1M rows × 329 support vectors:
#: 2.6 GB each at once); a block of 8,192 rows keeps them near 20 MB.
BATCH_ROWS = 8192
#: And at most this many bytes of one-vs-one decision values per block: a row has
#: C(C − 1)/2 of them, float64, so 8,192 rows of 100 classes were 324 MB.
PAIR_BLOCK_BYTES = 16 * 2**20


class ModelVersionError(ValueError):
    """A stored model written in another format version (or not a model at all)."""


@dataclass(frozen=True, eq=False)
class RunModel:
    """A fitted max-margin SVM as arrays (see the module docstring).

    Parameters
    ----------
    kernel : {"linear", "rbf", "poly"}
    gamma, coef0 : float
        rbf: exp(−gamma‖x − z‖²); poly: (gamma⟨x, z⟩ + coef0)^degree.
    degree : int
    support_vectors : array (n_sv, n_features)
    dual_coef : array (n_svm_classes − 1, n_sv)
        scikit-learn's ``dual_coef_``.
    intercept : array (n_pairs,)
    n_support : array of int (n_svm_classes,)
        Support vectors per SVM class, in ``svm_classes`` order (they are stored so).
    svm_classes : array of int
        The class indices the SVM was trained on (into ``class_names``).
    temperature : float
        Softmax temperature of the calibration; 1 when uncalibrated.
    class_names : array of str
        The run's classes in order (``ExportedProblem.classes``).
    support_keys : array of str (n_sv,)
        Node key of each support vector, ``""`` for one that is no stored node.
    vocabulary : tuple of tuple of str
        Sorted values of each categorical column whose one-hot ends the features; empty
        for a dataset without categorical columns.
    feature_columns : FeatureColumns or None
        The columns the features come from, by name; None when not recorded.
    scale_center, scale_width : tuple of float
        ``(x − center) / width`` of each numeric feature before the kernel; empty: none.
    """

    kernel: str
    gamma: float
    coef0: float
    degree: int
    support_vectors: np.ndarray
    dual_coef: np.ndarray
    intercept: np.ndarray
    n_support: np.ndarray
    svm_classes: np.ndarray
    temperature: float
    class_names: np.ndarray
    support_keys: np.ndarray
    vocabulary: tuple[tuple[str, ...], ...] = ()
    feature_columns: FeatureColumns | None = None
    scale_center: tuple[float, ...] = ()
    scale_width: tuple[float, ...] = ()

    @property
    def n_features(self) -> int:
        return int(self.support_vectors.shape[1])

    @property
    def n_numeric(self) -> int:
        """Features before the categorical columns' one-hot."""
        return self.n_features - sum(len(values) for values in self.vocabulary)

    @classmethod
    def from_fitted(cls, model: Any, keys: np.ndarray, class_names: np.ndarray,
                    vocabulary: tuple[tuple[str, ...], ...] = (),
                    feature_columns: FeatureColumns | None = None,
                    scaling: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())) -> RunModel:
        """The arrays of a fitted ``solvers.maxmargin.MaxMarginGraphCut``; ``keys`` are the
        node keys of the problem it was fitted on (positions beyond them, an incremental
        run's anchors, get ``""``), ``vocabulary`` its categorical columns' values
        (``ExportedProblem.vocabulary``), ``feature_columns`` the dataset's columns by name,
        ``scaling`` the (center, width) its numeric features were scaled by."""
        svm = model.svm_
        params = svm.get_params()
        kernel = params["kernel"]
        if kernel not in KERNELS:
            raise ValueError(f"a run model keeps a linear, rbf or poly kernel, got {kernel!r}")
        train = np.flatnonzero(model.induced_labels_ >= 0)
        node = train[svm.support_]
        keys = np.asarray(keys, dtype=object)
        support_keys = np.array([str(keys[i]) if i < len(keys) else "" for i in node.tolist()], dtype=str) \
            if len(node) else np.zeros(0, dtype=str)
        gamma = params["gamma"] if isinstance(params["gamma"], float) else 0.0
        calibrator = model.calibrator_
        return cls(kernel=kernel, gamma=float(gamma), coef0=float(params["coef0"]), degree=int(params["degree"]),
                   support_vectors=np.asarray(svm.support_vectors_, dtype=np.float64),
                   dual_coef=np.asarray(svm.dual_coef_, dtype=np.float64),
                   intercept=np.asarray(svm.intercept_, dtype=np.float64),
                   n_support=np.asarray(svm.n_support_, dtype=np.int64),
                   svm_classes=np.asarray(svm.classes_, dtype=np.int64),
                   temperature=1.0 if calibrator is None else float(calibrator.temperature_),
                   class_names=np.asarray([str(name) for name in class_names], dtype=str),
                   support_keys=support_keys, vocabulary=tuple(tuple(map(str, values)) for values in vocabulary),
                   feature_columns=feature_columns, scale_center=tuple(map(float, scaling[0])),
                   scale_width=tuple(map(float, scaling[1])))

    # -- storage -------------------------------------------------------------------------

    def to_bytes(self) -> bytes:
        header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kernel": self.kernel, "gamma": self.gamma,
                  "coef0": self.coef0, "degree": self.degree, "temperature": self.temperature,
                  "vocabulary": [list(values) for values in self.vocabulary],
                  "feature_columns": None if self.feature_columns is None else self.feature_columns.as_record(),
                  "scale_center": list(self.scale_center), "scale_width": list(self.scale_width)}
        buffer = io.BytesIO()
        np.savez(buffer, header=np.array(json.dumps(header)), support_vectors=self.support_vectors,
                 dual_coef=self.dual_coef, intercept=self.intercept, n_support=self.n_support,
                 svm_classes=self.svm_classes, class_names=self.class_names, support_keys=self.support_keys)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, blob: bytes) -> RunModel:
        """Load ``to_bytes``' output; ``ModelVersionError`` for another format version."""
        try:
            with np.load(io.BytesIO(bytes(blob)), allow_pickle=False) as arrays:
                header = json.loads(str(arrays["header"]))
                if header.get("format") != FORMAT_NAME or header.get("version") != FORMAT_VERSION:
                    raise ModelVersionError(
                        f"the stored model is {header.get('format')!r} version {header.get('version')!r}; this"
                        f" graphlabel reads {FORMAT_NAME!r} version {FORMAT_VERSION}: label the dataset again"
                        " with --solver maxmargin to store a model it can read")
                fields = {name: arrays[name] for name in ("support_vectors", "dual_coef", "intercept", "n_support",
                                                           "svm_classes", "class_names", "support_keys")}
        except (ValueError, KeyError, OSError) as error:
            if isinstance(error, ModelVersionError):
                raise
            raise ModelVersionError(f"the stored model cannot be read ({error}): label the dataset again with"
                                    " --solver maxmargin") from None
        return cls(kernel=header["kernel"], gamma=float(header["gamma"]), coef0=float(header["coef0"]),
                   degree=int(header["degree"]), temperature=float(header["temperature"]),
                   vocabulary=tuple(tuple(values) for values in header.get("vocabulary", ())),
                   feature_columns=FeatureColumns.from_record(header.get("feature_columns")),
                   scale_center=tuple(header.get("scale_center") or ()),
                   scale_width=tuple(header.get("scale_width") or ()), **fields)

    # -- prediction ----------------------------------------------------------------------

    def encode(self, numeric: np.ndarray, onehot: np.ndarray | None = None) -> np.ndarray:
        """The SVM's input of records: their numeric features (as stored) scaled as the
        run's were, then their categorical one-hot (``onehot``, in ``vocabulary``)."""
        X = np.asarray(numeric, dtype=np.float64)
        if self.scale_center:
            if X.ndim != 2 or X.shape[1] != len(self.scale_center):
                raise ValueError(f"the run's model takes {len(self.scale_center)} numeric features per record,"
                                 f" got {X.shape[1] if X.ndim == 2 else X.shape}")
            X = (X - np.asarray(self.scale_center)) / np.asarray(self.scale_width)
        return np.hstack([X, onehot]) if onehot is not None else X

    def check_features(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            got = X.shape[1] if X.ndim == 2 else X.shape
            raise ValueError(f"the run's model takes {self.n_features} features per record, got {got}: give"
                             " --features the columns the dataset was ingested with, in the same order")
        return X

    def kernel_matrix(self, X: np.ndarray) -> np.ndarray:
        """K(x, sv) for each row x of X and each support vector, (m, n_sv)."""
        SV = self.support_vectors
        inner = X @ SV.T
        if self.kernel == "linear":
            return inner
        if self.kernel == "poly":
            return (self.gamma * inner + self.coef0) ** self.degree
        squared = (X * X).sum(axis=1)[:, None] + (SV * SV).sum(axis=1)[None, :] - 2.0 * inner
        return np.exp(-self.gamma * np.maximum(squared, 0.0))

    def pair_decisions(self, X: np.ndarray) -> np.ndarray:
        """libsvm's one-vs-one decision values (m, n_pairs), pairs (i, j), i < j, in
        ``np.triu_indices`` order, positive favouring i; binary: f(x), positive for the
        second class (scikit-learn's sign)."""
        K = self.kernel_matrix(self.check_features(X))
        k = len(self.svm_classes)
        if k == 2:
            return (K @ self.dual_coef[0] + self.intercept[0])[:, None]
        start = np.concatenate([[0], np.cumsum(self.n_support)])
        first, second = np.triu_indices(k, 1)
        D = np.empty((K.shape[0], len(first)))
        for p, (i, j) in enumerate(zip(first.tolist(), second.tolist())):  # a loop over class pairs
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            D[:, p] = K[:, si] @ self.dual_coef[j - 1, si] + K[:, sj] @ self.dual_coef[i, sj] + self.intercept[p]
        return D

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Class index (into ``class_names``) of each row."""
        return self.predict_with_proba(X)[0]

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Probabilities (m, len(class_names)); classes the SVM never saw get 0."""
        return self.predict_with_proba(X)[1]

    def predict_with_proba(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``predict(X)`` and ``predict_proba(X)`` from one evaluation of the kernel against
        the support vectors, which is nearly all of either's cost; ``BATCH_ROWS`` rows at a
        time, fewer when their decision values would pass ``PAIR_BLOCK_BYTES``."""
        X = self.check_features(X)
        labels = np.empty(len(X), dtype=np.int64)
        P = np.empty((len(X), len(self.class_names)))
        k = len(self.svm_classes)
        step = max(1, min(BATCH_ROWS, PAIR_BLOCK_BYTES // (8 * max(1, k * (k - 1) // 2))))
        for start in range(0, len(X), step):  # a loop over blocks of rows, for memory
            rows = slice(start, start + step)
            D = self.pair_decisions(X[rows])
            labels[rows], P[rows] = self._vote(D), self._probabilities(D)
        return labels, P

    # Why the rules below are written here and in solvers.maxmargin (_vote, _class_scores)
    # both: importing the solvers package imports scipy, about 0.17 s of the start-up that
    # `graphlabel explain` keeps under a second with numpy alone (bench/cli.py);
    # tests/test_run_model.py holds the two to the same labels, ties included.

    def _vote(self, D: np.ndarray) -> np.ndarray:
        """libsvm's vote on decision values D: the pair (i, j), i < j, votes for i when its
        value is > 0, else for j; the most votes win, the first class on a tie. Two classes:
        f ≥ 0 is the second class (scikit-learn reports libsvm's value negated)."""
        k = len(self.svm_classes)
        if k == 2:
            return self.svm_classes[(D[:, 0] >= 0).astype(np.int64)]
        first, second = np.triu_indices(k, 1)
        winner = np.where(D > 0, first[None, :], second[None, :])
        votes = np.bincount((np.arange(len(D))[:, None] * k + winner).ravel(), minlength=len(D) * k).reshape(-1, k)
        return self.svm_classes[votes.argmax(axis=1)]  # arg-max takes the first of tied counts

    def _scores(self, D: np.ndarray) -> np.ndarray:
        """Per-class scores (m, n_svm_classes) as ``solvers.maxmargin._class_scores``."""
        k = len(self.svm_classes)
        if k == 2:
            return np.column_stack([-D[:, 0], D[:, 0]])
        first, second = np.triu_indices(k, 1)
        S = np.zeros((len(D), k))
        # the pairs (i, ·) are contiguous in libsvm's order; the pairs (·, j) after a stable sort
        S[:, :-1] = np.add.reduceat(D, np.flatnonzero(np.diff(first, prepend=-1)), axis=1)
        by_second = np.argsort(second, kind="stable")
        S[:, 1:] -= np.add.reduceat(D[:, by_second], np.searchsorted(second[by_second], np.arange(1, k)), axis=1)
        S /= k - 1
        return S

    def _probabilities(self, D: np.ndarray) -> np.ndarray:
        Z = self._scores(D) / self.temperature
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        P = np.zeros((Z.shape[0], len(self.class_names)))
        P[:, self.svm_classes] = E / E.sum(axis=1, keepdims=True)
        return P

    def support_shares(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What each support vector contributes to the decision at one point ``x``:
        |α_s|·K(x, sv_s), with |α_s| the sum of the magnitudes of its dual coefficients
        over its pairs, as a share of their sum; and the SVM class of each support
        vector. Returns ``(share, svm_class)``, both (n_sv,)."""
        K = self.kernel_matrix(self.check_features(np.asarray(x, dtype=np.float64).reshape(1, -1)))[0]
        pull = np.abs(self.dual_coef).sum(axis=0) * np.abs(K)
        total = pull.sum()
        share = pull / total if total > 0 else np.zeros_like(pull)
        return share, np.repeat(self.svm_classes, self.n_support)


def support_explanation(model: RunModel, x: np.ndarray, limit: int = 10) -> dict[str, Any]:
    """What ``explain`` shows for a node a maxmargin run labelled: each class's share of
    the support vectors' pull at the node's features ``x`` (``RunModel.support_shares``),
    largest first, and the ``limit`` strongest support vectors (``key``, ``label``: the
    class the SVM was trained to give it, ``share``)."""
    share, svm_class = model.support_shares(x)
    per_class = np.bincount(svm_class, weights=share, minlength=len(model.class_names))
    order = np.argsort(-per_class, kind="stable")
    strongest = np.argsort(-share, kind="stable")[:limit]
    return {
        "n_support_vectors": len(share),
        "support_class_shares": {str(model.class_names[c]): float(per_class[c]) for c in order if per_class[c] > 0},
        "support_vectors": [{"key": str(model.support_keys[i]), "label": str(model.class_names[svm_class[i]]),
                             "share": float(share[i])} for i in strongest],
    }


def keep_run_model(store: GraphStore, run_id: str, exported: ExportedProblem, prediction: Prediction,
                   feature_columns: FeatureColumns | None = None) -> int | None:
    """Store the run's max-margin model (``prediction.info["model"]``) with its
    ``LabelRun``, and the dataset's ``feature_columns``; returns its support vector count,
    or None when the solver fitted no such model (every solver but maxmargin)."""
    fitted = prediction.info.get("model")
    if fitted is None or not hasattr(fitted, "svm_"):
        return None
    scaling = exported.scaling
    model = RunModel.from_fitted(fitted, exported.keys, exported.classes, exported.vocabulary, feature_columns,
                                 ((), ()) if scaling is None else (scaling.center, scaling.width))
    store.write_model(run_id, model.to_bytes())
    return len(model.support_keys)
