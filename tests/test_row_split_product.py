"""The threaded sparse-dense product of the block CG: the same bits as scipy's, on real graphs."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp

import solvers._row_split_product as row_split
from similarity import knn_graph
from solvers import solve
from solvers._row_split_product import RowSplitProduct, product_threads


@pytest.mark.parametrize("threads", [2, 3, 7])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_split_product_is_scipys_product_bit_for_bit(digits, monkeypatch, threads, dtype):
    monkeypatch.setattr(row_split, "MIN_WORK", 0)
    X, _ = digits
    K = knn_graph(X, k=10).astype(dtype)
    # rows with no edge (the block CG pads its operator so) at the end and in the middle
    empty = sp.csr_matrix((5, K.shape[1]), dtype=dtype)
    K = sp.vstack([K[:900], empty, K[900:], empty]).tocsr()
    block = np.random.default_rng(0).random((K.shape[1], 10)).astype(dtype)  # K is (n + 10) × n
    operator = RowSplitProduct(K, threads=threads)
    assert len(operator._ranges) == threads
    split = operator @ block
    np.testing.assert_array_equal(split, K @ block)
    np.testing.assert_array_equal(operator @ block, split)  # its pool reused, its output new
    assert split.dtype == dtype
    assert split.shape == (K.shape[0], 10)


@pytest.mark.parametrize("min_work", [0, 10**12], ids=["split", "one range"])
def test_the_product_writes_into_the_block_it_is_given(digits, monkeypatch, min_work):
    # the block CG keeps one block for its products: the same bits as scipy's, written in place
    monkeypatch.setattr(row_split, "MIN_WORK", min_work)
    X, _ = digits
    K = knn_graph(X, k=10).astype(np.float32)
    operator = RowSplitProduct(K, threads=2)
    block = np.random.default_rng(0).random((K.shape[1], 6)).astype(np.float32)
    out = np.full((K.shape[0], 6), np.nan, dtype=np.float32)  # what was there before is overwritten
    assert operator.product(block, out=out) is out
    np.testing.assert_array_equal(out, K @ block)
    upcast = np.full((K.shape[0], 6), np.nan)  # float64 block: scipy's upcast product, copied in
    assert operator.product(block.astype(np.float64), out=upcast) is upcast
    np.testing.assert_array_equal(upcast, K @ block.astype(np.float64))


def test_a_block_of_another_dtype_or_a_vector_gets_scipys_upcast_product(digits, monkeypatch):
    monkeypatch.setattr(row_split, "MIN_WORK", 0)
    X, _ = digits
    K = knn_graph(X, k=10).astype(np.float32)
    operator = RowSplitProduct(K, threads=2)
    block = np.random.default_rng(0).random((K.shape[1], 3))  # float64
    np.testing.assert_array_equal(operator @ block, K @ block)
    assert (operator @ block).dtype == np.float64
    np.testing.assert_array_equal(operator @ block[:, 0], K @ block[:, 0])
    np.testing.assert_array_equal(operator @ np.asfortranarray(block.astype(np.float32)), K @ block.astype(np.float32))


def test_the_ranges_hold_near_equal_edges_and_cover_every_row(digits):
    X, _ = digits
    K = knn_graph(X, k=10)
    ranges = RowSplitProduct(K, threads=4)._ranges
    assert ranges[0][0] == 0
    assert ranges[-1][1] == K.shape[0]
    assert all(b == c for (_, b), (c, _) in zip(ranges, ranges[1:]))
    edges = [K.indptr[b] - K.indptr[a] for a, b in ranges]
    assert max(edges) - min(edges) <= 2 * np.diff(K.indptr).max()


def test_the_products_run_on_other_threads_above_min_work_and_on_the_caller_below(digits, monkeypatch):
    X, _ = digits
    K = knn_graph(X, k=10).astype(np.float32)
    block = np.ones((K.shape[0], 4), dtype=np.float32)
    seen = []
    kernel = row_split._sparsetools.csr_matvecs

    def noted(*args):
        seen.append(threading.current_thread().name)
        return kernel(*args)

    monkeypatch.setattr(row_split._sparsetools, "csr_matvecs", noted)
    monkeypatch.setattr(row_split, "MIN_WORK", K.nnz * 4 + 1)
    RowSplitProduct(K, threads=2) @ block
    assert seen == ["MainThread"]  # below MIN_WORK: scipy's own product, the same kernel on the caller's thread
    monkeypatch.setattr(row_split, "MIN_WORK", K.nnz * 4)
    RowSplitProduct(K, threads=2) @ block
    split = sorted(seen[1:])  # one range on the caller's thread, one on the pool's (either first)
    assert len(split) == 2
    assert split[0] == "MainThread"
    assert split[1].startswith("graphlabel-product")


def test_the_thread_count_follows_omp_num_threads_else_the_usable_cpus(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert product_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    assert product_threads() == row_split.MAX_THREADS
    monkeypatch.delenv("OMP_NUM_THREADS")
    import os

    assert product_threads() == min(len(os.sched_getaffinity(0)), row_split.MAX_THREADS)
    monkeypatch.delattr(os, "sched_getaffinity")  # macOS, Windows
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert product_threads() == 3


def test_harmonic_labels_flags_and_iterations_do_not_depend_on_the_threads(flipped_digits, monkeypatch):
    # the products run split over threads at every size here; one thread is scipy's own product
    problem, _, _ = flipped_digits
    monkeypatch.setattr(row_split, "MIN_WORK", 0)
    runs = []
    for threads in ("1", "2", "5"):
        monkeypatch.setenv("OMP_NUM_THREADS", threads)
        runs.append(solve(problem, "harmonic", solver="cg"))
    one = runs[0]
    assert one.noisy.any()
    assert one.info["cg_block_iterations"] > 0
    for other in runs[1:]:
        np.testing.assert_array_equal(other.scores, one.scores)
        np.testing.assert_array_equal(other.labels, one.labels)
        np.testing.assert_array_equal(other.noisy, one.noisy)
        assert other.info["cg_block_products"] == one.info["cg_block_products"]


def test_a_dask_worker_of_the_flows_runs_the_product_on_one_thread():
    # flows/runners.py starts one single-threaded worker process per CPU; Dask's nanny sets
    # OMP_NUM_THREADS=1 in them, so parallel components do not each start a pool of threads
    from distributed import Client, LocalCluster

    from flows.runners import _cluster_kwargs

    with LocalCluster(**{**_cluster_kwargs(1), "processes": True}) as cluster, Client(cluster) as client:
        assert client.submit(product_threads).result() == 1


def test_the_product_threads_end_with_the_solve(flipped_digits, monkeypatch):
    # a process that solves every minute (serve) must not collect one idle thread per solve
    import gc
    import time

    monkeypatch.setattr(row_split, "MIN_WORK", 0)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    problem, _, _ = flipped_digits

    def product_threads_alive():
        return [t for t in threading.enumerate() if t.name.startswith("graphlabel-product")]

    def all_ended():
        gc.collect()
        deadline = time.monotonic() + 10
        while product_threads_alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        return product_threads_alive() == []

    operator = RowSplitProduct(problem.W.tocsr())
    operator @ np.ones((problem.n_nodes, 2))
    # the caller takes one of the three ranges; the pool starts a second thread only when its
    # first is still busy at the second hand-off (ThreadPoolExecutor reuses an idle thread),
    # which on this small graph it may not be
    assert 1 <= len(product_threads_alive()) <= 2
    del operator
    assert all_ended()
    for _ in range(3):
        solve(problem, "harmonic", solver="cg")
        solve(problem, "nmf")
    assert all_ended()
