"""The max-margin model a run keeps (labelling/run_model.py): the arrays give the fitted
SVC's own decisions, labels and probabilities back; another format version is refused."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_wine, make_blobs
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from labelling.run_model import BATCH_ROWS, FORMAT_VERSION, ModelVersionError, RunModel
from similarity import knn_graph
from solvers import LabelProblem
from solvers.maxmargin import MaxMarginGraphCut, _vote, paper_bandwidth


def fitted(loader, kernel="rbf", fraction=0.2):
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    given = np.full(len(y), -1)
    chosen = np.random.default_rng(0).choice(len(y), int(fraction * len(y)), replace=False)
    given[chosen] = y[chosen]
    W = knn_graph(X, 5, weights="gaussian", sigma=paper_bandwidth(X))
    model = MaxMarginGraphCut(kernel=kernel).fit(LabelProblem(W, given, n_classes=len(np.unique(y)), X=X))
    keys = np.array([f"k{i}" for i in range(len(y))], dtype=object)
    return model, keys, X, y


@pytest.mark.parametrize(("loader", "kernel"), [(load_digits, "rbf"), (load_wine, "rbf"), (load_wine, "cubic"),
                                                (load_wine, "linear")])
def test_the_stored_arrays_decide_as_the_fitted_svm(loader, kernel):
    model, keys, X, y = fitted(loader, kernel)
    stored = RunModel.from_bytes(RunModel.from_fitted(model, keys, np.unique(y).astype(str)).to_bytes())
    expected = model.svm_.decision_function(X)
    np.testing.assert_allclose(stored.pair_decisions(X), expected.reshape(len(X), -1), atol=1e-9)
    np.testing.assert_array_equal(stored.predict(X), model.predict(X))
    np.testing.assert_allclose(stored.predict_proba(X), model.predict_proba(X), atol=1e-9)
    assert stored.temperature == model.calibrator_.temperature_
    assert set(stored.support_keys) <= set(keys)
    assert len(stored.support_keys) == len(model.svm_.support_)


def test_two_classes_follow_the_sign_of_f():
    X, y = load_wine(return_X_y=True)
    keep = y < 2
    X, y = StandardScaler().fit_transform(X[keep]), y[keep]
    given = np.where(np.arange(len(y)) % 4 == 0, y, -1)
    W = knn_graph(X, 5, weights="gaussian", sigma=paper_bandwidth(X))
    model = MaxMarginGraphCut().fit(LabelProblem(W, given, n_classes=2, X=X))
    stored = RunModel.from_bytes(RunModel.from_fitted(model, np.arange(len(y)).astype(str), np.array(["a", "b"]))
                                 .to_bytes())
    np.testing.assert_allclose(stored.pair_decisions(X)[:, 0], model.decision_function(X), atol=1e-9)
    np.testing.assert_array_equal(stored.predict(X), model.predict(X))
    assert (stored.predict(X) == y).mean() > 0.9


def of_svc(svm: SVC) -> RunModel:
    """A RunModel of a plain fitted SVC (the arrays from_fitted reads from maxmargin's)."""
    gamma = svm.get_params()["gamma"]
    return RunModel(kernel=svm.kernel, gamma=float(gamma) if isinstance(gamma, float) else 0.0,
                    coef0=float(svm.coef0), degree=int(svm.degree), support_vectors=svm.support_vectors_,
                    dual_coef=svm.dual_coef_, intercept=svm.intercept_, n_support=svm.n_support_.astype(np.int64),
                    svm_classes=svm.classes_.astype(np.int64), temperature=1.0,
                    class_names=svm.classes_.astype(str), support_keys=np.full(len(svm.support_), "", dtype=str))


def test_a_decision_value_of_zero_goes_where_libsvm_sends_it():
    """libsvm gives a pair's vote to its second class when the value is exactly 0 (two
    classes: f = 0 is the second class); the stored model predicted the first there."""
    binary = SVC(kernel="linear").fit([[-1.0], [1.0], [-2.0], [2.0]], [0, 1, 0, 1])
    at_zero = np.array([[0.0], [0.5], [-0.5]])
    assert binary.decision_function(at_zero)[0] == 0
    np.testing.assert_array_equal(of_svc(binary).predict(at_zero), binary.predict(at_zero))
    three = SVC(kernel="linear", decision_function_shape="ovo").fit([[-1.0, 0.0], [1.0, 0.0], [0.0, 5.0]], [0, 1, 2])
    assert three.decision_function([[0.0, 0.0]])[0, 0] == 0
    np.testing.assert_array_equal(of_svc(three).predict([[0.0, 0.0]]), three.predict([[0.0, 0.0]]))


def test_tied_votes_and_one_kernel_evaluation_give_svc_predict():
    """A 3-class grid with cyclic, one-vote-each points (the first class wins, as in
    libsvm); predict_with_proba's blocks of rows are the decision values of all rows at once;
    the vote is the solver's own (solvers.maxmargin._vote) on any decision values."""
    X, y = make_blobs(300, centers=[[0, 0], [4, 0], [2, 3.4]], cluster_std=1.5, random_state=0)
    grid = np.stack(np.meshgrid(np.linspace(-2, 6, 200), np.linspace(-2, 5.5, 200)), -1).reshape(-1, 2)
    svm = SVC(C=1.0, gamma=0.5, decision_function_shape="ovo").fit(X, y)
    stored = of_svc(svm)
    assert len(grid) > 4 * BATCH_ROWS  # the row blocks give what all rows at once give
    labels, probabilities = stored.predict_with_proba(grid)
    np.testing.assert_array_equal(labels, svm.predict(grid))
    D = stored.pair_decisions(grid)
    np.testing.assert_array_equal(stored._vote(D), labels)
    np.testing.assert_array_equal(stored._probabilities(D), probabilities)
    rng = np.random.default_rng(0)
    for k in (2, 3, 4):
        svm_k = SVC().fit(rng.normal(size=(40, 2)), np.arange(40) % k)
        D = rng.choice([-1.0, 0.0, 1.0], size=(500, k * (k - 1) // 2))
        np.testing.assert_array_equal(of_svc(svm_k)._vote(D), _vote(svm_k, D[:, 0] if k == 2 else D))


def test_support_shares_sum_to_one_and_name_the_classes():
    model, keys, X, y = fitted(load_wine)
    stored = RunModel.from_fitted(model, keys, np.unique(y).astype(str))
    share, classes = stored.support_shares(X[0])
    assert share.sum() == pytest.approx(1.0)
    assert (share >= 0).all()
    assert classes.shape == share.shape
    by_class = np.bincount(classes, weights=share, minlength=3)
    assert by_class.argmax() == y[0]  # the support vectors of its own class pull the most


def test_another_version_or_not_a_model_is_refused_in_one_line():
    model, keys, X, y = fitted(load_wine)
    blob = RunModel.from_fitted(model, keys, np.unique(y).astype(str)).to_bytes()
    with np.load(io.BytesIO(blob)) as arrays:
        parts = dict(arrays)
    header = json.loads(str(parts["header"]))
    parts["header"] = np.array(json.dumps({**header, "version": FORMAT_VERSION + 1}))
    buffer = io.BytesIO()
    np.savez(buffer, **parts)
    other = buffer.getvalue()
    with pytest.raises(ModelVersionError, match=f"version {FORMAT_VERSION + 1}.*reads .* version {FORMAT_VERSION}"):
        RunModel.from_bytes(other)
    with pytest.raises(ModelVersionError, match="cannot be read"):
        RunModel.from_bytes(b"not a model")
    stored = RunModel.from_bytes(blob)
    with pytest.raises(ValueError, match="takes 13 features per record, got 12"):
        stored.predict(X[:, :12])


def test_the_feature_columns_are_kept_and_a_model_without_them_reads_as_none():
    from test_predict import without_feature_columns

    from labelling.feature_columns import FeatureColumns

    model, keys, X, y = fitted(load_wine)
    columns = FeatureColumns(tuple(f"f{i}" for i in range(13)), None, ())
    blob = RunModel.from_fitted(model, keys, np.unique(y).astype(str), (), columns).to_bytes()
    assert RunModel.from_bytes(blob).feature_columns == columns
    older = RunModel.from_bytes(without_feature_columns(blob))  # a model kept before the field existed
    assert older.feature_columns is None
    np.testing.assert_array_equal(older.predict(X), RunModel.from_bytes(blob).predict(X))


def test_the_numeric_scaling_is_kept_and_new_records_are_encoded_with_it():
    """The SVM is fitted on features in the graph's units (labelling.problems.numeric_scaling):
    the model keeps the numbers and encodes stored-unit records with them."""
    X, y = load_wine(return_X_y=True)
    center, width = X.mean(axis=0), X.std(axis=0)
    Z = (X - center) / width
    labeled = np.zeros(len(y), bool)
    labeled[::4] = True
    model = MaxMarginGraphCut().fit(LabelProblem(knn_graph(Z, 10), np.where(labeled, y, -1), X=Z))
    kept = RunModel.from_bytes(RunModel.from_fitted(model, np.arange(len(y)).astype(str), np.unique(y).astype(str),
                                                    scaling=(tuple(center), tuple(width))).to_bytes())
    assert kept.scale_center == tuple(center)
    np.testing.assert_allclose(kept.encode(X), Z)
    np.testing.assert_array_equal(kept.predict(kept.encode(X)), model.svm_.predict(Z))
    onehot = np.eye(2)[np.arange(len(y)) % 2]
    np.testing.assert_allclose(kept.encode(X, onehot), np.hstack([Z, onehot]))
    with pytest.raises(ValueError, match="takes 13 numeric features per record, got 12"):
        kept.encode(X[:, :12])
    # a model without scaling reads the features as stored
    plain = RunModel.from_fitted(model, np.arange(len(y)).astype(str), np.unique(y).astype(str))
    np.testing.assert_array_equal(plain.encode(X), X)

