"""Harmonic function solution, in the regularised form of max-margin graph cuts.

Zhu, Ghahramani & Lafferty (2003) label the unlabelled nodes with the harmonic
function that equals the given labels on labelled nodes; Kveton et al. (2010, Sec. 3,
eq. 4) regularise it with γ_g I, which adds an absorbing sink to the random walk; this
module adds a second sink, γ_d D_uu, proportional to each node's degree:

    ℓ_u = (L_uu + γ_g I + γ_d D_uu)⁻¹ W_ul y_l,        L = D − W.

With γ_d the walk from any node dies with the same probability γ_d / (1 + γ_d) at every
step whatever the graph's weights (γ_g's share depends on the degree, so on the kernel's
scale): the absorbing-walk form of LabelSpreading's α (Zhou et al. 2004), with α =
1 / (1 + γ_d), on the random-walk normalised graph and with hard clamping.

Multi-class: one column per class, ``y_l`` the one-hot rows of the given labels, so
row i of the solution is the probability that a walk from i is absorbed at a label
of each class (Zhu et al., Sec. 2).

Decisions the papers leave open, and what this module does
-----------------------------------------------------------
- Per-label confidence: a label of trust c enters its class column with value c
  (its walk mass is partly lost), so doubtful labels pull less.
- Confidence of a prediction: the normalised absorption probability of the chosen
  class, p_iŷ = F_iŷ / Σ_c F_ic, sharpened by a temperature: p ∝ p^(1/T). The raw p is
  under-confident on kNN graphs (mass leaks to every class through a few hops), so T
  is fitted, when ``calibrate=True``, by maximising the likelihood of the given labels
  under their leave-one-out distributions (labels only, no hidden data; a flagged label
  counted with the probability its leave-one-out gives its class); when every label's
  leave-one-out arg-max is its class, that likelihood has no optimum, and T makes the
  labels' mean probability of their class (N + 1) / (N + 2), Laplace's rule of succession
  (``solvers._calibration.fit_temperature`` says why). The sink (γ_g > 0) shrinks all
  columns alike and does not change p; a node no label can reach has F_i = 0 and gets
  label -1, confidence 0.
- The default (``class_mass="auto"``): the centred arg-max below when the run's given
  labels hold three or more classes and label at least ``AUTO_CENTER_MIN_SHARE`` = 7% of
  the problem's nodes, else the smoothed class masses. Why
  (``python -m bench class_mass``, 2026-11-28; clean labels at 1%, 10%, 50% and 80%
  labelled, each cell against the best of LabelSpreading α = 0.2, α = 0.99 and
  scikit-network's diffusion; ``bench/results/class_mass_seeds_0-19.md``: the eight real
  sets, 20 label draws; ``class_mass_generated_centred.md``: the six 20k-node sets at 1%
  and 10%): with smoothed masses everywhere, 10 of the 32 real cells were more than a point
  below the best peer (mean −0.001); with this rule 8 (mean +0.004): glass at 10%, 50% and
  80% −0.066, −0.079, −0.075 → −0.026, −0.032, −0.016, soybean at 10% and 80% −0.016,
  −0.018 → −0.007, −0.006; the generated sets at 10% stay within a point (unequal class
  sizes −0.006 → +0.003). Why two conditions. Binary sets: centring lost at every share
  (diabetes at 1% −0.015, where the smoothed masses lead by 0.012; vote at 80% −0.023
  against −0.014). Sparse labels: centring lost on every multi-class set below 7%, though
  at 1% both rules lead the best peer (digits +0.018 against +0.027, segment +0.034
  against +0.039, 30 classes +0.015 against +0.048, glass −0.030 against −0.025); with 6 of
  60 labels wrong on digits (3.3% labelled, ``python -m bench class_mass_flipped``'s
  protocol, 20 draws) 0.903 against 0.910; on the demo (5.6%) 0.951 against 0.955; and in
  ``--solver auto``'s cross-validation (``python -m bench auto``, seeds 0-4: 3-6% labelled)
  the centred default scored lower on the folds and lost the one-standard-error rule more
  often (auto 0.944 against 0.953 on digits, 0.769 against 0.786 on segment). 7% lies
  between those shares and the 10% cells (glass's draws there hold 7-14% of the nodes).
  With 6 of 60 labels wrong on wine and iris (34% and 40% labelled) centring was within
  0.002 of the smoothed masses.
- Smoothed class masses (``class_mass="smoothed"``, the default with two classes or few
  labels): the arg-max is taken after scaling each class column so that the classes' masses
  over the unlabelled nodes are in the ratio n_c + κ (Zhu et al. 2003, Sec. 4, with the
  target shares smoothed): n_c the class's given labels, κ = 100 pseudo-labels per labelled
  class (a symmetric Dirichlet prior on the class shares). With a few labels that is close
  to uniform masses; with many it follows the labels' own shares.
  Why normalise at all: as the unlabelled share grows
  the harmonic solution flattens (Nadler, Srebro & Zhou 2009) and its arg-max piles onto
  the classes whose labels absorb the most mass (``bench/hard_data.py``, 20k nodes at 1%:
  0.307 with no normalisation against 0.821 with uniform masses on overlapping classes;
  WDBC at 1%, 4-7 labels: every one of 569 nodes in one class on two of five seeds).
  Why smoothed, not uniform or the labels' shares (measured with γ_d = 0.03, no noise
  flags, on the hard_data sets, seeds 0-4 on the real ones, against the best peer of each
  cell): uniform masses lose where the classes are unequal (unequal class sizes at 10%
  −0.043, diabetes at 10% −0.022); the labels' shares (κ = 0) lose on the 20k-node sets at
  1% (wide blobs −0.47 with γ_d = 0, two clusters per class −0.19): there the solution is
  nearly flat, and the arg-max after normalisation turns on differences smaller than the
  sampling noise of 20 labels per class. κ = 30 still lost two clusters per class at 1%
  (−0.015) and unequal class sizes at 10% (−0.023); κ = 100 lost neither (−0.002, −0.006)
  and κ = 300 lost diabetes at 10% (−0.017, κ = 100 −0.014, κ = 30 +0.002): 100 is the
  smallest κ that kept the large sets within a point. The earlier rule (uniform from 20
  labels, else none) was set by the binary sets at 1%, where uniform masses had looked
  ruinous (ionosphere 0.754 → 0.450); that was the noise flags: with 3 or 4 labels every
  label was flagged and the masses were then taken over the unflagged labels, none, so
  every class weight was 0. The masses are now taken over the labels the final system
  holds, and without flags uniform masses gave 0.686 against 0.709 there.
- Centred arg-max (``class_mass="center"``, the default with three or more classes and 7%
  labelled): subtract each class's mean absorption probability over the unlabelled nodes
  from its column, then take the arg-max, as scikit-network's ``DiffusionClassifier``
  centres its diffused columns (there over all nodes). Zhu et al.'s normalisation divides a column by
  its mass, so the class shares it asks for decide every node the solution leaves flat; the
  shift removes each class's baseline and leaves the differences. The noise flags, the
  temperature, the confidences and the written scores are on the smoothed scale: a node's
  confidence is its chosen class's share there, and the scores' arg-max can differ from the
  label (``labelling/scores.py``; on digits with 18 labels per class, 0.8-1.7% of the nodes
  against 0.3-0.6% with smoothed masses). Why the smoothed scale and not the unscaled one
  it had as an option: with 6 of 60 labels wrong (``bench/class_mass_flipped.py``'s
  protocol, 20 draws) the unscaled flags lost 1.3 to 2.0 points to the smoothed masses on
  wine, iris and digits; on the smoothed scale 0.1, 0.1 and 0.7. The unscaled flags did
  better on glass at 10% (−0.005 against the best peer, −0.026 now), not enough to pay
  for that. A run solved in batches of components resolves "auto" once, on the whole
  graph (``class_mass_rule``: flows/solving.py), so that a component's rule does not
  depend on the components packed with it; an incremental region is solved without class
  masses (``labelling/regions.py`` says why).
- Fading prior (``class_mass="fading"``, an option): class masses in the ratio (1 − λ)
  n_c / n_l + λ / C, n_l all given labels, C the labelled classes, λ = r / (r + 10) and r
  the unlabelled nodes per given label (λ = 0.91 at 1% labelled, 0.47 at 10%, 0.09 at 50%,
  0.02 at 80%): a share, where the smoothed prior's 100 pseudo-labels per class are a count
  that drowns the labels of a small set (weka's glass at 10%: 22 labels against 600).
  ``python -m bench class_mass --only digits,segment,wdbc,diabetes,ionosphere,vote,glass,
  soybean --seeds 20`` (``bench/results/class_mass_seeds_0-19.md``, 2026-11-28: clean
  labels drawn at random, 1%, 10%, 50% and 80% labelled, 20 draws each): it left 10 of
  the 32 cells more than a point below the best peer (mean +0.004), the default 11 (mean
  −0.001); it gained on glass at 10%, 50% and 80% (−0.066, −0.079, −0.075 → −0.011,
  −0.032, −0.020), soybean at 10% (−0.016 → +0.001) and vote at 50% and 80% (−0.018,
  −0.014 → −0.013, −0.009), and lost on ionosphere at 50% and 80% (−0.002, −0.003 →
  −0.009, −0.011).
  Why not the default: it follows the labels' own class counts as soon as labels are
  dense, and wrong labels move those counts. ``python -m bench class_mass_flipped``
  (``bench/results/class_mass_flipped.md``: scikit-learn's wine, iris, breast cancer and
  digits, an 8-NN graph, 30 or 60 random given labels, 6 of the 60 wrong as in the test
  suite's wine scenario, 20 draws): with the wrong labels it scored 0.049 ± 0.020 below the
  smoothed prior on wine and 0.032 ± 0.014 on iris, 0.26 and 0.27 on the worst draws;
  without them the means were within 0.008, though iris had a draw 0.13 below. Its noise
  flags read the leave-one-out distributions on the smoothed scale: on its own scale flag
  F1 fell in 4 of the 6 flipped cells of ``python -m bench
  noise_flags --skip-cost --methods harmonic --data digits,segment,wdbc`` (segment at 10%
  flipped 0.586 → 0.542, digits at 20% 0.864 → 0.850, WDBC 0.902 → 0.887 and 0.834 →
  0.822; measured with it as the default and in the flags), for the same reason. The
  constant: r + 3 left glass at 10% 0.039 below the best peer, r + 30 did no better than
  r + 10.
- Degree sink γ_d = 0.03 (the default). Why: it keeps far nodes from flattening to one
  value, so the class-mass scaling is no longer a knife-edge; measured as above with the
  smoothed masses: wide blobs at 1% κ = 10 −0.140 / −0.043 / −0.020 at γ_d = 0.01 / 0.03 /
  0.1, unequal class sizes at 10% κ = 30 −0.031 / −0.023 / −0.011; but a strong sink
  costs where labels are dense (wide blobs at 10% with uniform masses +0.003 / −0.001 /
  −0.013; overlapping classes at 1% +0.022 / +0.020 / +0.008): 0.03 is the middle, and
  0.05 did alike (within 0.011 everywhere, a little lower on WDBC and vote at 1%). On
  fresh draws (generated sets with data and label seed 1, real sets with label seeds 5-9)
  the default (γ_d = 0.03, κ = 100, noise flags on) was within a point of the best peer in
  23 of 24 cells; it lost ionosphere at 1% (−0.042; −0.017 without the flags).
- A flagged label whose class keeps fewer than ``REVISE_MIN_UNFLAGGED`` = 3 unflagged
  labels stays as given in the re-solve (flagged, its own node predicted as its
  leave-one-out class). Why: a label that is the last of its class leaves the class no mass
  when it is left out, so its margin is 1 whatever its neighbours say, and dropping it
  deleted the class (digits at 1%, 17-19 labels, some class with one: 0.709 against 0.880,
  seeds 0-4; segment at 1% 0.057); with one or two other labels of its class the
  leave-one-out still has too little of the class to judge by: on ionosphere at 1% (3-4
  labels in all) the rule "the last of its class stays" scored 0.027 below the best peer
  over label seeds 0-9, "fewer than 3 stay" 0.012 below (``bench/noisy_labels.py --seeds
  0-9``); with 10 or more labels per class it changes nothing.
- Linear solver: SuperLU (``splu``) up to ``direct_max_nodes`` unknowns (1,000); above,
  conjugate gradients with the Jacobi preconditioner, all classes' columns at once in
  float32 (``_block_cg``, with a coarse space drawn from the current labels) at the
  default tolerance, falling back to float64 CG per column and then pyamg's
  smoothed-aggregation AMG for a column that converges slowly (``_spd_solver`` says why,
  with the measurements). 1,000, not 10,000 as before: SuperLU's fill-in on 32-d 10-NN
  graphs made it slower than CG from 2,000 nodes up (1.05 s against 0.53 s at 2k, 9.7 s
  against 0.40 s at 10k, same accuracy).
- The product of the block CG (scipy's CSR times an n × C block, float32): its cost is
  the gather of a row of the block per edge, not arithmetic (on the 100k-node graph one
  product with 10 columns cost 5 to 50 single-vector products, with the caches shared by
  other jobs). The block CG therefore regroups the rows by label once the labels exist
  (``_grouped_by_label``). Kernels measured and not kept (same graph and block, loaded
  2-core machine): a numba 0.68 kernel reading each row's indices once for all columns,
  serial: 28-63 ms of CPU against scipy's 21-36 ms in one run, 62 against 114 ms of wall
  time in another; on both cores 120 against 114 ms; no clear win, for a new dependency
  that compiled for 7 s on first use. Measured again on a quieter machine (load 0.2-0.5)
  on the grouped 1M-node graph: a numba ``prange`` row kernel took 124 ms on 2 threads and
  305 ms on one against scipy's 156 ms (medians of 9; at 100k 5.8 and 15.5 against 8.4
  ms): a compiled, threaded product gains 1.3×, on products that are a third to a half of
  the solve. torch's CSR product (torch is not a core
  dependency): 99 against 114 ms. A sparse coarse-space operator instead of the dense
  one (``_coarse_space``): faster alone, slower in the solve (0.39 s against 0.18 s of
  profile over three solves). One single-vector product per column (the block stored
  column by column) instead of one block product: twice the time (grouped by label, float32,
  10 columns, medians of 9, load 0.5: 21 against 9.4 ms at 100k, 302-312 against 156 ms at
  1M). A start from each node's nearest label in hops (scipy's ``dijkstra(min_only=True,
  unweighted=True)`` from the labels, so that the coarse space could start at once and the
  components come for free): 0.47-0.87 s at 1M, where the three CG iterations before the
  coarse space cost about 0.45 s (every node lies within 3 hops of a label there).
- The work around the products (issue 15 §3: the default solve as fast as scikit-network's
  ``Propagation``). On the 100k-node graph of ``bench/solver_scale.py`` (1% labelled) the
  sparse products were 0.10 s of a 0.38 s solve; the rest was numpy and scipy work around
  them. Cut without changing an iteration or a label (the 48 cells of
  ``bench/hard_data.py``'s sets, seeds 0-2, and the 100k and 1M graphs gave the same labels
  and flags; noise-flag precision / recall unchanged on digits, segment and WDBC): the
  components by one breadth-first search when it reaches every node
  (``solvers._graph.graph_components``); the coarse correction per class range of the
  grouped rows (``_coarse_space``); the label tracking from the coarse restart on, and
  then an arg-max only at the rows whose previous label is no longer the strict maximum
  (``_arg_max``: 2.5 against 5.1 ms on 100k × 10); the
  first product over the rows next to the labels only (the right-hand side is zero
  elsewhere: 10 against 25 ms); in the leave-one-out estimate Bᵀ K from W itself (no float64
  copy of K), its row sums by products and its short-walk votes without an n × C sum; the
  row sums of ``_finish`` and of the sunk-node check by einsum. Measured in-process,
  interleaved with ``Propagation`` and the code before (2-core machine shared with other
  jobs, load 1.6-2.8; two runs each): at 100k (medians of 9) 0.34-0.35 s against 0.40-0.47 s
  with the flags, 3.3-3.4× Propagation's time against 3.9-4.5×, and 0.28-0.29 s against
  0.33-0.35 s without, 2.7-2.8× against 3.3-3.4×; at 1M (medians of 5) 5.4-6.1 s against
  7.4-8.7 s, 2.2-2.4× against 3.0-3.4×, and 4.6 s against 6.2-7.7 s, 1.8-1.9× against
  2.5-3.0× (single runs spread by ±30%). The goal, Propagation's time, is not reached: the
  products alone take about as long as Propagation's whole fit. What is left is mostly
  memory traffic: the products (9 of them on 1M nodes, 2.1 of 5.6 s of profile), about ten
  passes over the n × C blocks per iteration, the regrouping (one permutation of the graph;
  at 1M it saves more than it costs: a product took 158 ms grouped against 437 ms in the
  graph's order). Measured and not kept: the product into a preallocated block (scipy's
  private ``csr_matvecs``: 12.4 against 12.6 ms), the product split over two threads (13.1
  against 12.4 ms on that loaded machine; on a quiet one two threads halve it: kept since,
  below), a scratch block for the label tracking (no gain), the leave-one-out's terms as
  l × l sparse matrices (65 against 47 ms),
  the cast of K's values inside its first scaling (no gain), the regrouping's column
  renumbering in place by one ``np.take`` into the index array (475 against 188 ms at 1M:
  numpy copies an overlapping input; in slices it is kept since, ``_renumber``), a
  breadth-first node order from the start (its products 251 ms against 437 at 1M, but a
  second permutation of the graph: no net gain at 100k), fewer iterations:
  ``LABEL_CHANGE_SHARE`` 2e-4 or 3e-4 saved a product at 100k (2 labels changed) and none at
  1M; the coarse space after 2 iterations saved none and changed 73-96 labels of segment at
  1%; the passes over the blocks outside the products (the step, the residual, the
  direction and their dot products) on fixed tiles of rows shared over two threads (five
  such passes alone ran in 12 against 24 ms on 1M × 10 float32): the same labels and
  flags, and a median paired ratio to the code before of 0.96 with the flags and 0.98
  without at 100k (7 rounds), 0.97 and 1.02 at 1M (5 rounds;
  ``bench/results/harmonic_paired_*_tiles.md``, 2026-12-07): a py-spy profile put the tiled
  passes at about 0.12 s of the 1M solve's 2.9, beside 0.9 s of products, 0.3 s of
  regrouping, 0.17 s of label tracking and 0.15 s of the first product.
- The product on several threads (``_Blocks.operator``: ``solvers/_row_split_product.py``).
  scipy's kernel releases the GIL, so each thread runs it on its own range of K's rows; the
  values are bit for bit scipy's, so iterations, labels and flags do not change. On a quiet
  2-core machine (load 0.4-1.1) one product on the 100k-node graph took 3.0 against 5.7 ms,
  and ``python -m bench harmonic_paired --against`` the code before (fresh processes,
  medians of the ratio to ``Propagation`` in the same rounds) gave at 100k (7 rounds)
  1.79× against 2.15× with the flags and 1.54× against 1.86× without; at 1M (5 rounds)
  1.70× against 2.02× and 1.15× against 1.68× (2.10 against 3.04 s), the same products,
  accuracy and flags. The first product, over the rows next to the labels only, stays on
  one thread: 104 ms against 191-203 ms for the whole product on two at 1M (medians of 7).
  The noise flags' estimate runs its n × C products the same way (``_local_leave_one_out``).
  Not kept: KB = B_s W split over threads by rows (scipy's sparse product releases the GIL
  too): 87 against 143 ms at 1M with the stacking, 2% of the solve, for a second kind of
  split product.
- The block CG's memory. The right-hand side W_{·l} Y_l is built sparse (it is nonzero only
  next to a label: 17% of the rows of the 1M-node graph at 1% labelled) and becomes the
  residual's padded block, with no dense float64 n × C copy (80 MB at 1M, held through the
  solve before) and no float32 copy held by the caller; the node-order operator is built in
  the call, so ``_block_cg`` holds the only reference and releases it once the rows are
  regrouped (``_System`` no longer keeps it: only its dtype was read). Why it is worth time as well as
  memory: on this 2-core VM a page the process touches for the first time costs a fault
  (a 40 MB block took 120 ms to fill when freshly mapped against 7 ms when reused), so a
  fresh process pays for its peak. On the 1M-node graph of ``bench/solver_scale.py`` the
  call's peak resident memory fell from 494 to 280 MiB over the loaded graph (at 100k 47 to
  30; these peaks, and the others in this paragraph, are ``ru_maxrss`` over the process's
  peak before the call, which held the ``LabelProblem``'s transposed copy of W: the call's
  own rise is about 200 MiB more at 1M, 417 MiB on 2026-12-07, and the differences between
  two codes hold), and ``python -m bench harmonic_paired`` (alternating fresh processes beside the
  code before; two runs each, loads 0.5-1.2) gave, as multiples of ``Propagation``'s time in
  the same rounds, 2.04-2.49× against 2.32-2.69× at 1M with the flags and 1.48-1.98× against
  1.86-2.22× without (5 rounds), 2.42-2.72× against 2.48-2.90× and 2.06-2.37× against
  2.20-2.50× at 100k (7 rounds); the same labels and flags at 100k and 1M and in the 48 cells
  of ``bench/hard_data.py``'s sets (seeds 0-2). Measured after it and not kept (the same
  bench at 1M, 5 rounds each, medians of the ratio to ``Propagation``): the coarse space
  after 2 iterations on the regrouped (large) systems, so that one more product runs
  grouped: 2.26× against 2.22× with the flags, 1.81× against 1.86× without, the same 9
  products and 2 labels of the 990k changed.
  Since then the CG holds five n × C blocks and nothing of that size for a moment: the
  residual, the iterate, the direction, the preconditioned residual and one block Q for
  everything else, namely each product (``RowSplitProduct.product`` writes into it), the step
  α P, the start vector's residual product and the regrouping's copies (Q then swaps places
  with the iterate); the coarse space's E is summed from K's rows by class (no dense n × m Z
  and K Z); the label tracking scales X a slice of rows at a time; the warm start is
  rounded to float32 as it is divided by the scale and released once padded. Measured
  (tracemalloc, 50,000 blobs of 500 classes, a 10-NN graph, 5% labelled, one block = n × C
  float32 = 95 MiB): the first solve peaked 7.3 blocks above its start before, 5.3 after;
  the whole call (its peak, the whole re-solve at this size) 10.8 before, 7.6 after (the
  leave-one-out estimate's part, 6.7 blocks before, is 2.7 since it sums its short walks by
  label pairs at 32 classes and more, ``_local_leave_one_out``). ``python -m bench
  harmonic_paired --classes 500 --against CHECKOUT`` (100k nodes, 1% labelled, 3 rounds,
  2026-12-06, ``bench/results/harmonic_paired_100000_500.md``): the call's peak 902 against
  1,147 MiB over the loaded graph, 6.3× against 7.4× ``Propagation``'s time with the flags
  (the estimate 0.12 against 0.31-0.55 s) and 5.8× against 6.8× without; at 10 classes 23
  against 30 MiB at 100k (``harmonic_paired_100000_memory.md``, 7 rounds) and 281 against
  280 at 1M (``harmonic_paired_1000000_memory.md``, 5 rounds: there the graph outweighs the
  blocks), 1.44× ``Propagation``'s time at 1M in both. The labels and flags are the same;
  the scores differ by up to 2.5e-7 where the rows are regrouped (E in float64 now, from
  float32 products before). Knowing its peak, the call asks for it at the door
  (``check_blocks``; ``PEAK_BLOCKS``): a solve that cannot fit ends at once in one line.
- Stopping (``stop=``): ``"labels"`` (the default) stops the block CG once no node's
  label has changed for 2 iterations; ``"rtol"`` runs to the residual tolerance. On the
  100k-node graph of ``bench/solver_scale.py`` (1% labelled, one run on a loaded 2-core
  machine, medians of 3, paired with the committed lock-step CG): 100 column products
  (10 block iterations) against 324, 0.65 s against 2.34 s without flags, same accuracy
  (0.9936); with 10% of the labels flipped and flags on 1.35 s against 4.42 s, flag
  precision / recall 1.00 / 0.83 in both. Scores stop short of ``rtol`` (within 5e-3 of
  the exact solve on digits, same labels); on digits, segment and WDBC (10, 10, 28 labels
  per class, seeds 100-104) flags and accuracy matched the committed solver except
  segment at 10% flipped (precision / recall 0.68 / 0.49 against 0.72 / 0.54; with
  ``stop="rtol"`` 0.70 / 0.51). "No label has changed" allows ``LABEL_CHANGE_SHARE`` = 1e-4
  of the unknowns (10 nodes of 100k; none below 10k unknowns, so the real sets and the
  noise-flag sets stop as before). Why: on that 100k-node graph the last iterations each
  moved a handful of the 99,000 labels (after the coarse restart 301, 64, 13, 8, 2, 0, 0):
  at 1e-4 the block CG stopped after 10 products instead of 12 with the same labels as the
  solve run to ``rtol`` (no flags; with flags accuracy 0.99344 against 0.99345, one node);
  3e-4 took 9 products and changed 2 labels, 1e-3 8 products and 6 labels. On the 20k-node
  sets of ``bench/hard_data.py`` (2 labels allowed) accuracy stayed within 0.0001 of the
  exact rule in all 12 cells.
- Tolerance: ``rtol`` = 1e-4 (it was 1e-8). On the 100k-node 10-NN graph of
  ``bench/solver_scale.py`` (1% labelled) CG needed 540 column products at 1e-8, 394 at
  1e-5 and 324 at 1e-4, with the same labels at every node and scores within 5e-5.
- Noise flags (the rule): for each given label i, the solution at i is recomputed
  *as if i were unlabelled* (leave-one-out). Its ``noise_score`` is the margin by which
  the best other class beats the given one in that leave-one-out distribution (in
  [-1, 1]; cleanlab's ``normalized_margin`` with the sign flipped, so a person ranks by
  it), and the label is flagged when the margin reaches ``noise_threshold`` = 0.35. A
  margin, not "another class has ≥ 0.5" (this module's rule before): on a flat
  distribution (hard, overlapping classes) no class reaches 0.5 while a margin still
  ranks, and on clean labels the margin flags less. The distribution is taken on the
  class-mass scale the predictions use (``class_mass``): with it, digits' 10% flips are
  found at 0.97 / 0.87 instead of 0.97 / 0.84, segment's at 0.63 / 0.51 instead of
  0.55 / 0.46, WDBC's at 0.89 / 0.85 instead of 0.80 / 0.75 (seeds 0-9). 0.35 was chosen
  on digits and segment (10 labels per class) and WDBC (28 per class), seeds 0-9: at
  0.35 the clean-label false-flag rate is 0.4% / 4.0% / 1.6% (the issue's limit: 5%;
  0.25 lets segment's rise to 6.6%, 0.45 drops digits' recall to 0.74). ``bench/noise_flags.py`` reports it on
  other seeds next to cleanlab. With the degree sink and the smoothed class masses (the defaults since;
  ``bench/noise_flags.py --skip-cost --methods harmonic``, seeds 100-104) flag precision /
  recall at 10% flipped were digits 1.000 / 0.820 (before 1.000 / 0.800), WDBC 0.914 /
  0.900 (0.830 / 0.800), segment 0.647 / 0.543 (0.743 / 0.457), and the clean-label
  false-flag rate digits 0.0%, segment 3.4% (1.7%), WDBC 2.1% (2.5%). Flagged nodes get the
  leave-one-out class as their prediction, and the problem is solved again (below). A
  label that is the only one of its class in the run (``LabelProblem.lone_labels``) is not
  flagged: left out, its class has no mass, so its margin is the best other class's whole
  share whatever the label is worth (weka's glass and soybean at 10% labelled, seeds 0-2:
  23 of 29 such labels flagged, all right, and their nodes predicted as another class).
- What the re-solve does with a flagged label (``noisy_labels``): ``"soften"`` (the
  default) clamps it at its expected class distribution, (1 − m) e_y + m q, the given
  class with weight 1 − m and its leave-one-out distribution q with weight m (m its
  margin, the ``noise_score``): read m as the chance that the label is wrong, and the
  clamp is what the label says in expectation. ``"drop"`` (the default before) unclamps
  it, ``"keep"`` solves once. Why soften: a flag is right about a flipped label and wrong
  about a right but atypical one (vote's members who cross the party line; on clean labels
  every flag is false; on vote at 10% labelled the flagged labels' margins ran from 0.35
  to 0.91), so a flagged label keeps the weight the flag leaves it.
  ``bench/noisy_labels.py`` (the rules side by side, the flags the same): on the real sets
  of ``bench/hard_data.py`` with clean labels (seeds 0-2), vote at 10% labelled scored
  0.011 below the best peer softened against 0.018 dropped (kept: 0.009), diabetes at 10%
  0.009 against 0.011, segment at 10% 0.001 against 0.003, every other cell within 0.004
  of dropping; with flipped labels (digits, segment, WDBC, vote, diabetes; 10-30 labels
  per class, 0-20% flipped, seeds 100-109) dropping was at most 0.0037 better (digits at
  20% flipped, 10 per class; diabetes at 10% 0.0034) and up to 0.0061 worse (segment at
  20%), keeping up to 0.015 worse. Rules measured and not kept: dropping only from a
  margin of 0.5 up (digits and WDBC at 20% flipped 0.008 below dropping), a clamp weight
  of m² (vote at 10% 0.010 below the peer, digits at 20% flipped 0.0065 below dropping) or
  √m (vote 0.013 below the peer, the flipped sets up to 0.002 closer to dropping), class
  masses taken from the softened rows (no change).
- The re-solve after the flagged labels (``resolve_hops``). From
  ``RESOLVE_NEAR_MIN_NODES`` = 50,000 unknowns up, only the unknowns within
  ``resolve_hops`` = 2 edges of a softened (a boundary value now) or dropped label are
  solved again, the rest held at the first solution (``_resolve_near``), unless that
  region holds more than ``RESOLVE_MAX_SHARE`` = 25% of the nodes; below, or then, the
  whole system is solved again, warm-started. Why: few labels are flagged on a large graph
  and the whole re-solve cost 4 products with the whole graph, a regrouping and a coarse
  space. On the 100k-node graph of ``bench/solver_scale.py`` (1,000 labels, 2 flagged;
  in-process, alternating, load ~3 on 2 cores) the fit took 0.49-0.69 s against 0.69-0.77
  s; the region held 581 nodes (5 iterations), and 1 label of the 100k differed from the
  whole re-solve (accuracy 0.99344 against 0.99345). With 3 hops 8,750 nodes (1 label),
  with 4 the region passed 25%. With 3% of the labels flipped (32 dropped) 11,214 nodes
  and 10 labels differed (0.99340 against 0.99341); with 10% (98 dropped) the region
  passed 25%. (Measured with dropping; softened, on the same graph: 579 nodes and 4
  iterations with no flips, accuracy 0.99345; 11,583 nodes and 0.99342 at 3% flipped; the
  whole re-solve at 10%, 0.99335 against 0.99336 dropped.) Why not below 50,000: there the
  whole re-solve costs tens of milliseconds, and its further iterations over the whole
  graph (the first solve stops at stable labels, not at ``rtol``) were worth accuracy:
  local re-solves on the sets of ``bench/hard_data.py`` lost up to 0.0008 on the 20k-node
  sets (unequal class sizes at 10%) and 0.0039 on segment at 1% (seed 1).
- How the leave-one-out is computed (``loo=``). Exact (``_leave_one_out``): a Schur
  complement needs s_i = wᵢᵀ A⁻¹ wᵢ, one solve per given label: cheap with SuperLU's
  factorisation, but one CG each above 10k unknowns (with 987 labels on 100k nodes the
  solve took 389 s against 3.8 s without flags). ``"local"`` (the default, at every
  size) estimates s_i from the walks that return to i within 4 steps, summed exactly,
  plus a share of the class's long-walk absorption (``_local_leave_one_out`` says how
  and why); it costs a few sparse products with the labels' columns, no solve and no
  product with the whole graph (58-62 ms of CPU at 100k nodes / 1,000 labels, against
  104-190 ms when two of its terms were n × C products with the graph). Measured against the exact
  leave-one-out (same margin rule, seeds 0-9): digits 10% flipped 0.97 / 0.84 against
  exact 0.93 / 0.88; clean segment 4.1% false flags against exact 10.0% (the estimate
  leans towards the neighbours' vote, which is what keeps clean labels in overlapping
  classes from being flagged); clean WDBC 2.1% against 2.0%.

References
----------
Zhu, X., Ghahramani, Z., Lafferty, J. (2003). Semi-supervised learning using Gaussian
fields and harmonic functions. ICML.
Kveton, B., Valko, M., Rahimi, A., Huang, L. (2010). Semi-supervised learning with
max-margin graph cuts. AISTATS. Section 3, eq. (4).
Zhou, D., Bousquet, O., Lal, T. N., Weston, J., Schölkopf, B. (2004). Learning with local
and global consistency. NIPS.
Nadler, B., Srebro, N., Zhou, X. (2009). Statistical analysis of semi-supervised learning:
the limit of infinite unlabelled data. NIPS.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg, splu
from threadpoolctl import ThreadpoolController

from ._budget import Budget
from ._calibration import fit_held_out_temperature, normalise, sharpen
from ._graph import graph_components, margin_scores, per_label
from ._memory import check_blocks
from ._row_split_product import RowSplitProduct
from ._timing import Stopwatch
from ._validation import Integral, Interval, Options, Real, validate_params
from .problem import LabelProblem, Prediction

SOLVERS = ("auto", "direct", "cg", "amg")
NOISY_LABEL_RULES = ("soften", "drop", "keep")
STOP_RULES = ("labels", "rtol")
# Jacobi-CG iterations allowed per right-hand side before AMG takes over (see _spd_solver).
JACOBI_MAX_ITERATIONS = 300
# CG runs in float32 (all columns at once, _block_cg) when the tolerance allows it;
# tighter tolerances run column by column in float64.
FLOAT32_RTOL = 1e-5
# stop="labels": CG stops once no node's label has changed for this many iterations in a row.
LABEL_PATIENCE = 2
# stop="labels": an iteration counts as steady when at most this share of the unknowns changed label.
LABEL_CHANGE_SHARE = 1e-4
# CG iterations before the coarse space is drawn from the labels (see _block_cg).
COARSE_AFTER = 3
# The block CG regroups the rows by label (_grouped_by_label) when an n × C block is at least this
# large: below, the block stays in the CPU's cache in any order.
GROUP_MIN_BYTES = 2 * 2**20
#: n × C float32 blocks at the call's peak (tracemalloc, the graph's and the labels' arrays
#: included): with the whole re-solve after the flags (below RESOLVE_NEAR_MIN_NODES unknowns)
#: 7.6 at 50,000 nodes of 500 classes and 8.4 at 20,000 of 200; with one solve (no flags, or
#: the local re-solve) 5.8 at 20,000 of 200 and 5.4 at 100,000 of 200. What ``check_blocks``
#: asks for at the door, with the graph's copies (the kept edges, the scaled operator, its
#: regrouped rows; 12 bytes an edge each).
PEAK_BLOCKS = 8
PEAK_BLOCKS_ONE_SOLVE = 6
GRAPH_COPIES = 3
#: Classes from which the leave-one-out estimate sums its short walks as one l × l matrix of
#: label pairs (_local_leave_one_out says why).
SHORT_WALKS_BY_LABEL_PAIRS = 32
#: Values (rows × classes) of X the block CG's label tracking scales at a time.
LABEL_SLICE = 2**20


@functools.cache
def _blas() -> ThreadpoolController:
    """The process's BLAS libraries, found once. ``threadpool_limits()`` finds them again at
    each call by scanning every loaded library: 1.2 ms a call with numpy and scipy loaded,
    3.8 ms in the CLI's process (faiss, pyarrow, Prefect), three calls a solve, against
    0.02 ms for a limit on a found controller. In a process with the CLI's imports the
    default solve of ``bench/harmonic_paired.py``'s 100k-node graph took 315 against 326 ms
    (30 interleaved pairs, median paired difference 8 ms); in that bench's own processes
    (numpy and scipy alone) the change is within its noise (1.78× against 1.81×
    ``Propagation``'s time, ``bench/results/harmonic_paired_100000_blas.md``). A library
    loaded after the first solve would not be limited; the ones the solve calls, numpy's
    and scipy's, are loaded by then."""
    return ThreadpoolController()


def _one_blas_thread():
    """A context with BLAS on one thread (the block CG's level-1 work: see ``_spd_solver``)."""
    return _blas().limit(limits=1, user_api="blas")


class _Blocks:
    """Arithmetic on n × C blocks of column vectors through a wide view.

    Per-column scalars (CG's step lengths) broadcast along the last axis of an n × C array
    run numpy's inner loop C elements at a time: on 100k × 10 float32 a scaled copy took
    0.79 ms and a column-wise dot product 0.69 ms. Viewed as (n / k) × (k C) with the scalars
    tiled k times, the same operations took 0.25 and 0.17 ms. The blocks are allocated with
    their rows padded to a multiple of k (zero rows, which CG leaves at zero), and the
    operator is padded to match (an indptr only, no copy of the graph).
    """

    WIDTH = 128  # rows per wide row

    def __init__(self, n: int, C: int, dtype) -> None:
        self.n, self.C, self.dtype = n, C, dtype
        self.rows = -(-n // self.WIDTH) * self.WIDTH

    def empty(self) -> np.ndarray:
        return np.empty((self.rows, self.C), dtype=self.dtype)

    def padded(self, A) -> np.ndarray:
        """A (n × C, dense or sparse) in a new padded block."""
        out = np.zeros((self.rows, self.C), dtype=self.dtype)
        if sp.issparse(A):
            A.astype(self.dtype, copy=False).toarray(out=out[: self.n])  # written in place: no dense copy
        else:
            out[: self.n] = A
        return out

    def wide(self, A: np.ndarray) -> np.ndarray:
        return A.reshape(-1, self.WIDTH * self.C)

    def dot(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Column-wise dot products Σ_i A_ic B_ic (float64 accumulation across lanes)."""
        lanes = np.einsum("ij,ij->j", self.wide(A), self.wide(B))
        return lanes.reshape(self.WIDTH, self.C).sum(axis=0, dtype=np.float64)

    def tiled(self, a: np.ndarray) -> np.ndarray:
        return np.tile(np.asarray(a, dtype=self.dtype), self.WIDTH)

    def operator(self, K: sp.csr_matrix) -> RowSplitProduct:
        """K padded to the blocks' rows, its products with a block split over threads."""
        indptr = np.concatenate([K.indptr, np.full(self.rows - self.n, K.indptr[-1], dtype=K.indptr.dtype)])
        return RowSplitProduct(sp.csr_matrix((K.data, K.indices, indptr), shape=(self.rows, self.rows)))


def _coarse_space(K, scale, labels, blocks: _Blocks):
    """The two-level preconditioner V ↦ V + Z E⁻¹ Zᵀ V of ``_block_cg``: one coarse unknown per
    class region.

    Z (n × m) holds s_i⁻¹ = (d_i + γ_g)^½ at the unknowns whose current label is class c in
    column c (the near-null vector of I − K = S A S on a region: A 1 ≈ 0 away from labels),
    and E = Zᵀ (I − K) Z is m × m (m ≤ C): one more pass over K (below). None when no node has
    a label yet or E is singular.

    When the rows are grouped by label (``_grouped_by_label``, the large systems), column c of
    Z is nonzero on one range of rows only: Zᵀ V is then one short product per class on its own
    rows and Z M one scaled row of M per class, n × C values each, written into one scratch
    block, where dense products read all of Z (m × n × C) and allocate. On the 100k-node graph
    of bench/solver_scale.py (grouped, one BLAS thread) one application took 1.8-2.2 ms against
    2.8-3.1 ms (medians of 31, interleaved). Otherwise Z is kept
    dense (its two products are BLAS calls, n × m by m × C).
    """
    rows = np.flatnonzero(labels >= 0)
    if rows.size == 0:
        return None
    classes, column = np.unique(labels[rows], return_inverse=True)
    z = (1.0 / scale[rows]).astype(blocks.dtype)
    first, last = int(rows[0]), int(rows[-1]) + 1
    grouped = last - first == rows.size and bool(np.all(column[1:] >= column[:-1]))
    if grouped:
        bounds = np.searchsorted(column, np.arange(classes.size), side="right")
        ranges = list(zip([0, *bounds[:-1].tolist()], bounds.tolist()))  # per class, in rows
        ZtZ = np.diag([float(z[a:b] @ z[a:b]) for a, b in ranges])
        # Zᵀ K Z row by row: z_cᵀ K over class c's rows alone (K is symmetric), summed over each
        # class's range of columns. Why not K Z: Z dense is n × m and K Z another, two blocks of
        # the solve's size beside the CG's own at its peak ("The block CG's memory"), for
        # products with one short vector each.
        z64 = z.astype(np.float64)
        starts = np.array([a for a, _ in ranges])
        ZtKZ = np.stack([np.add.reduceat((K.matrix[first + a:first + b].T @ z64[a:b])[first:last] * z64, starts)
                         for a, b in ranges])
        E = ZtZ - ZtKZ
    else:  # small systems (GROUP_MIN_BYTES): Z dense, two BLAS products
        Z = np.zeros((blocks.rows, classes.size), dtype=blocks.dtype)
        Z[rows, column] = z
        KZ = K @ Z
        Z_t = np.ascontiguousarray(Z.T)
        E = (Z_t @ Z).astype(np.float64) - (Z_t @ KZ).astype(np.float64)
    try:
        E_inv = np.linalg.inv(E).astype(blocks.dtype)
    except np.linalg.LinAlgError:
        return None
    if not np.isfinite(E_inv).all():
        return None
    if not grouped:
        return lambda V: V + Z @ (E_inv @ (Z_t @ V))
    out = blocks.empty()  # M⁻¹ V is written here: the caller reads it before the next call
    slices = [(z[a:b, None], slice(first + a, first + b)) for a, b in ranges]

    def precondition(V):
        M = E_inv @ np.stack([z_c[:, 0] @ V[rows_c] for z_c, rows_c in slices])
        out[:first], out[last:] = V[:first], V[last:]  # rows of no region (not reached; padding)
        for c, (z_c, rows_c) in enumerate(slices):
            np.multiply(z_c, M[c], out=out[rows_c])
            out[rows_c] += V[rows_c]
        return out

    return precondition


def _arg_max(Z: np.ndarray) -> np.ndarray:
    """Each row's arg-max, -1 where the row's maximum is not positive (not reached, or fixed).

    numpy's arg-max over rows of C values is most of ``_block_cg``'s label tracking (3.3 ms on
    100k × 10 float32); the tracking therefore calls it only on the rows whose previous label
    may have lost (``labels_of`` in ``_solve_system``): on rows that keep their label the test
    is a comparison with the previous label's value and a count (100k × 10 float32, 41 rows
    changed: 2.5 against 5.1 ms, medians of 31, interleaved; 12 against 23 ms on a loaded
    machine).
    """
    best = np.argmax(Z, axis=1)
    best[Z[np.arange(len(best)), best] <= 0] = -1
    return best


def _reached(X: np.ndarray, unknown: np.ndarray) -> bool:
    """Every unknown holds some mass: CG's front has reached the whole of every component with a
    label (a residual below rtol does not say so: far nodes of a long chain can still be 0)."""
    return bool(np.all((X.max(axis=1) > 0) | ~unknown))


def _weighted_labels(X: np.ndarray, w: np.ndarray, previous: np.ndarray | None) -> np.ndarray:
    """The arg-max of each row of X scaled by the class weights ``w`` (``_arg_max``'s labels).

    With the previous labels, the arg-max is taken only at the rows where the previous label
    is no longer the strict, positive maximum (a count of the columns at or above it); the
    same labels as a full arg-max (see ``_arg_max``).
    """
    Z = X * w
    if previous is None:
        return _arg_max(Z)
    C = Z.shape[1]
    top = np.take(Z, np.arange(len(Z)) * C + np.maximum(previous, 0))
    kept = Z >= top[:, None]
    at_least = np.einsum("ij->i", kept.view(np.int8)) if C < 128 else np.count_nonzero(kept, axis=1)
    recheck = np.flatnonzero((at_least != 1) | (previous < 0) | ~(top > 0))
    best = previous.copy()
    best[recheck] = _arg_max(Z[recheck])
    return best


def _grouped_by_label(K: sp.csr_matrix, labels: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
    """The node order that sorts nodes by their current label (stable: the graph's order within a
    label), and K with its rows and columns in that order (K[order][:, order], without sorting
    each row's column indices, which the product does not need).

    Why: a product K X with X n × C gathers a row of X (C values) per edge, and in the graph's
    own node order a row's neighbours lie anywhere in X. Grouped by label, a class region's
    neighbours are mostly in its own block of rows, a share of X that stays in the CPU caches.
    On the 100k-node graph of bench/solver_scale.py (10 classes, float32, C = 10, a loaded
    2-core machine) one product took 12-14 ms of CPU grouped against 21-36 ms in the graph's
    order, and the regrouping (one pass over the edges) about as much as one product; the
    block CG runs about 8 products after it, and the whole first solve took 398 ms of CPU
    against 488 ms (medians of 7, interleaved, same iterations, scores within 3e-7). Done at
    the coarse-space restart (``_block_cg``), when every reached node has a label. The
    labelled-graph premise (classes form regions) is what makes the grouping local; on a
    graph without it the order is no worse than the graph's own.
    """
    # labels are in [-1, C): as int16 numpy sorts them by radix sort (stable)
    order = np.argsort(labels.astype(np.int16 if labels.max(initial=0) < 2**15 else np.int64), kind="stable")
    position = np.empty(order.size, dtype=K.indices.dtype)
    position[order] = np.arange(order.size, dtype=K.indices.dtype)
    grouped = K[order]  # its own index array: renumbered in place below
    _renumber(grouped.indices, position)
    return order, grouped


#: Entries per slice of ``_renumber`` (256 KiB of int32: a slice and its scratch stay in cache).
RENUMBER_SLICE = 2**16


def _renumber(indices: np.ndarray, position: np.ndarray) -> None:
    """``indices[:] = position[indices]``, a slice at a time through one small scratch array.

    Why: ``position[indices]`` makes a new index array as large as the graph's (60 MB at 1M
    nodes), and on this VM a process pays for each page it touches for the first time (the
    module docstring, "The block CG's memory"). On the 1M-node graph of
    ``bench/solver_scale.py`` (15M entries) the whole gather took 240-330 ms and the slices
    36 ms (65,536 entries; 16,384: 43 ms, 1,048,576: 90-116 ms), the same indices. numpy's
    ``np.take(position, indices, out=indices)`` copies its input first when the two overlap
    (475 ms, measured before).
    """
    scratch = np.empty(min(RENUMBER_SLICE, indices.size), dtype=indices.dtype)
    for start in range(0, indices.size, RENUMBER_SLICE):  # a loop over slices of ~65k entries
        part = indices[start:start + RENUMBER_SLICE]
        np.take(position, part, out=scratch[: part.size])
        part[...] = scratch[: part.size]


def _block_cg(K, B, X0, rtol, maxiter, labels_of, scale, stop_on_labels=True, patience=LABEL_PATIENCE,
              coarse_after=COARSE_AFTER):
    """Preconditioned CG on (I − K) X = B for every column of B at once, in K's precision.

    With K = S W_uu S and S = diag(d'^-½), I − K = S A S is the Jacobi-scaled system, so
    plain CG here is Jacobi-preconditioned CG on A without a preconditioner pass (x = S x̂).
    Each column keeps its own step lengths; an iteration multiplies K with all the columns in
    one sparse-dense product (on the 100k-node graph of bench/solver_scale.py one float32
    product with 10 columns took 9.9 ms against 1.5 ms for one vector). Written out here
    because scipy's ``cg`` takes one vector and no library in the lock has a block CG.

    Two-level preconditioner: after ``coarse_after`` iterations (at once from a start
    vector), CG restarts from its iterate with M⁻¹ = I + Z E⁻¹ Zᵀ, Z one column per current
    class region (``_coarse_space``): Nicolaides' (1987) piecewise-constant coarse space,
    with the regions the solution itself draws. Why: the slowest error of the absorbing walk
    is close to constant on each well-connected region (the walk mixes inside a class's
    region long before a label absorbs it), and Jacobi-CG needs many iterations to move it;
    one coarse unknown per region moves it in every iteration. Measured (rtol 1e-4, float32,
    iterations of all columns): the 100k-node blobs of bench/solver_scale.py 34 → 13, the
    20k-node sets of bench/hard_data.py at 1% labelled: overlapping classes 27 → 19, wide
    blobs 21 → 14, 30 classes 27 → 19, 20% flipped 37 → 25; within ±2 on the small real sets;
    the regions after 3 iterations did better than after 2 (19) or 5 (14).

    Stops when every column's residual is below ``rtol`` times its right-hand side and every
    unknown has been reached (``_reached``) or, with
    ``stop_on_labels``, when ``labels_of`` (X, its row scale and, when known, the previous
    labels ↦ each node's label, -1 where none yet) has not changed for ``patience`` iterations
    in a row (at most ``LABEL_CHANGE_SHARE`` of the unknowns changing counts as unchanged);
    without a start vector the labels are tracked from the coarse restart's iteration on.
    A stop request of the caller (``solvers.stop_when``) ends it before its next iteration
    with ``SolverStopped``: harmonic has no time limit, and a run's solve stage took 180 s at 10M
    nodes (bench/results/e2e_10m.md).
    Returns X (n × C), a mask of the columns that reached ``rtol`` (all True after a label
    stop), the number of iterations, the number of products with K (iterations, the coarse
    set-up and a start vector's residual) and the stop reason.
    """
    n, C = B.shape
    budget = Budget("harmonic", None)  # no time limit: only reads the caller's stop request
    blocks = _Blocks(n, C, K.dtype)
    graph = K  # in the graph's own node order, for the regrouping below (then released)
    K = blocks.operator(K)
    R = blocks.padded(B)  # B, and from here on the residual B − (I − K) X
    del B
    # K P, then (I − K) P, then the step α P in each iteration, and the scratch of the products
    # and copies before them: one block for all (the module docstring, "The block CG's memory")
    Q = np.zeros_like(R)
    target = rtol**2 * blocks.dot(R, R)
    started = X0 is not None
    if not started:
        X = np.zeros_like(R)
    else:
        X = blocks.padded(X0)
        del X0  # the caller builds it in the call: the padded copy is the only one held
        R -= X
        R += K.product(X, out=Q)
    rr = blocks.dot(R, R)
    active = rr > target
    unknown = scale > 0
    # no start vector: X = 0 and no node has a label yet (labels_of would say -1 everywhere)
    labels = labels_of(X[:n], scale) if started else np.full(n, -1)
    order = None  # the iterates' row order when regrouped (None: the graph's)

    def regroup(labels):
        """Rows sorted by their current label (``_grouped_by_label``); the iterates follow."""
        nonlocal K, X, R, Q, scale, unknown, graph
        order, grouped = _grouped_by_label(graph, labels)
        graph = None  # the node-order operator: 4 bytes an edge nothing reads again
        K = blocks.operator(grouped)
        # np.take, not X[order]: numpy's take of whole rows took 0.2-0.3 ms on 100k × 10 float32
        # against 0.9 ms for the fancy index (medians of 31). Taken into the scratch block, which
        # then swaps places with the iterate (the padding rows are 0 in all three).
        np.take(X[:n], order, axis=0, out=Q[:n])
        X, Q = Q, X
        np.take(R[:n], order, axis=0, out=Q[:n])
        R, Q = Q, R
        scale, unknown = scale[order], unknown[order]
        return order, labels[order]

    if started and n * C * K.dtype.itemsize >= GROUP_MIN_BYTES:
        order, labels = regroup(labels)
    correct = _coarse_space(K, scale, labels, blocks) if started else None
    Z = R if correct is None else correct(R)
    P = Z.copy()
    rz = blocks.dot(R, Z)
    steady, iterations, reason = 0, 0, "rtol"
    # labels that may still change in a steady iteration (stop_on_labels; module docstring: "Stopping")
    settled = int(LABEL_CHANGE_SHARE * np.count_nonzero(unknown))
    products = int(started) + int(correct is not None)  # products with K outside the iterations
    while active.any() or not _reached(X[:n], unknown):
        if iterations >= maxiter:
            reason = "maxiter"
            break
        budget.check(f"block CG iteration {iterations + 1}")
        if correct is None and not started and iterations == coarse_after:
            if not stop_on_labels:
                labels = labels_of(X[:n], scale)
            if n * C * K.dtype.itemsize >= GROUP_MIN_BYTES:
                order, labels = regroup(labels)
            correct = _coarse_space(K, scale, labels, blocks)
            products += 1
            if correct is not None:  # restart from X with the two-level preconditioner
                Z = correct(R)
                P[...] = Z  # in place: the old direction's block is not held beside a new one
                rz = blocks.dot(R, Z)
        moving = active if active.any() else rz > 0  # below rtol but not reached: every column goes on
        if iterations == 0 and not started:
            # The first direction is the right-hand side, nonzero only next to the labels (on the
            # 100k-node graph 1% labelled, 15% of the rows): K P = Kᵀ P (K is symmetric) is then
            # a product over those rows of K alone: 10 against 25 ms (medians of 21, interleaved;
            # 24 against 48-54 ms on a machine loaded 4 times over).
            nonzero = np.flatnonzero(np.einsum("ij->i", np.abs(P[:n])) > 0)
            if nonzero.size < n // 4:
                Q[...] = K.matrix[nonzero].T @ P[nonzero]
            else:
                K.product(P, out=Q)
        else:
            K.product(P, out=Q)
        np.subtract(P, Q, out=Q)  # (I − K) P
        curvature = blocks.dot(P, Q)
        # a converged column (or an exact solution: zero direction) takes no further step
        alpha = blocks.tiled(np.divide(rz, curvature, out=np.zeros_like(rz), where=moving & (curvature > 0)))
        np.multiply(blocks.wide(Q), alpha, out=blocks.wide(Q))
        R -= Q
        np.multiply(blocks.wide(P), alpha, out=blocks.wide(Q))  # Q is free: the step α P
        X += Q
        Z = R if correct is None else correct(R)
        rz_new = blocks.dot(R, Z)
        rr = rz_new if correct is None else blocks.dot(R, R)
        beta = np.divide(rz_new, rz, out=np.zeros_like(rz), where=moving & (rz > 0))
        np.multiply(blocks.wide(P), blocks.tiled(beta), out=blocks.wide(P))
        P += Z
        rz = rz_new
        active &= rr > target
        iterations += 1
        products += 1
        # Without a start vector labels are tracked from the coarse restart's iteration on: before
        # it the front is still spreading (100k-node graph: 14,837 and 79,682 labels changed in the
        # first two iterations), so no earlier iteration can count as steady on a graph more than a
        # few hops across, and each call costs ~4 ms there (numpy's arg-max over rows of C values).
        if stop_on_labels and (started or iterations >= coarse_after):
            new = labels_of(X[:n], scale, labels if iterations > coarse_after or started else None)
            steady = steady + 1 if np.count_nonzero(new != labels) <= settled else 0
            labels = new
            if steady >= patience:
                reason = "labels"
                break
    converged = np.ones(C, dtype=bool) if reason == "labels" else ~active & _reached(X[:n], unknown)
    del R, P, Q, Z, correct  # before the copy below: the iterate is the only block left
    if order is not None:  # back to the graph's node order
        X_graph = np.empty((n, C), dtype=X.dtype)
        X_graph[order] = X[:n]
        return X_graph, converged, iterations, products, reason
    return X[:n], converged, iterations, products, reason


class _Work:
    """What a ``_CountedSolve`` has done: ``cg_iterations``, one product with A each (None for
    a factorisation), and ``amg_fallbacks``, the right-hand sides that Jacobi-CG left to AMG.

    Why an object of its own: the solve function counts into it, and when it counted into
    the ``_CountedSolve`` that holds it, the two made a reference cycle, which kept each
    solve's matrix (and ``_uu_solver``'s n × C system) alive until Python's cycle collector
    ran. maxmargin's five cross-fitting folds then held about 3 blocks of n × C float32
    each beside the next fold's solve (5,000 nodes of 50 classes, tracemalloc)."""

    __slots__ = ("cg_iterations", "amg_fallbacks")

    def __init__(self, cg_iterations: int | None) -> None:
        self.cg_iterations = cg_iterations
        self.amg_fallbacks = 0


class _CountedSolve:
    """B ↦ A⁻¹ B (``solve(B, x0)``) and the work done so far (``_Work``)."""

    def __init__(self, solve: Callable[..., np.ndarray], work: _Work) -> None:
        self._solve = solve
        self._work = work

    @property
    def cg_iterations(self) -> int | None:
        return self._work.cg_iterations

    @property
    def amg_fallbacks(self) -> int:
        return self._work.amg_fallbacks

    def __call__(self, B, x0=None) -> np.ndarray:
        return self._solve(B, x0)


def _spd_solver(A: sp.csr_matrix, method: str, direct_max_nodes: int, rtol: float):
    """A function B ↦ A⁻¹B for the SPD matrix A, factorised or preconditioned once.

    "cg" is scipy's conjugate gradients with the Jacobi (diagonal) preconditioner in float64,
    one column at a time, and pyamg's smoothed-aggregation AMG as a fallback for a
    right-hand side that has not converged after ``JACOBI_MAX_ITERATIONS`` (CG restarts from
    where Jacobi stopped). Why Jacobi first: with labels on 1% of a kNN graph, L_uu is
    diagonally dominant and well conditioned; on 100k nodes (10-NN, 32-d, bench/e2e.py)
    Jacobi-CG needed ~45 iterations per class at 2.7 ms each (1.7 s for 10 classes) where
    AMG spent 7.6 s on its set-up and 13 s on 60 cheaper-converging but far costlier
    iterations. AMG stays for the ill-conditioned cases (few labels on a long, chain-like
    graph). At the default tolerance the classes are solved together in float32 first
    (``_block_cg``, in ``_solve_system``); this solver finishes what that leaves.

    Returns a ``_CountedSolve``: B ↦ A⁻¹ B with the CG iterations and AMG fall-backs so far.
    """
    if method == "auto":
        method = "direct" if A.shape[0] <= direct_max_nodes else "cg"
    if method == "direct":
        # Symmetric diagonal scaling S A S (S = diag(A)^-½) before the factorisation: a node
        # far from all others has Gaussian weights near 1e-33 (an outlier of segment, for
        # one) and SuperLU's pivots on the unscaled rows returned values of 1e23.
        scale = 1.0 / np.sqrt(np.where(A.diagonal() > 0, A.diagonal(), 1.0))
        lu = splu((sp.diags(scale) @ A @ sp.diags(scale)).tocsc())

        def solve_direct(B, x0=None):  # exact: a start vector has nothing to add
            B = np.asarray(B, dtype=np.float64)
            return (lu.solve(B * (scale[:, None] if B.ndim == 2 else scale))
                    * (scale[:, None] if B.ndim == 2 else scale))

        return _CountedSolve(solve_direct, _Work(cg_iterations=None))  # no CG: a factorisation

    A = A.tocsr()
    diagonal = A.diagonal()
    inverse_diagonal = 1.0 / np.where(diagonal > 0, diagonal, 1.0)
    # a plain elementwise product: a sparse diagonal matrix goes through scipy's sparse
    # matvec machinery on every iteration (with contiguous right-hand sides, below, CG on
    # 100k nodes went from 25.6 to 6.7 ms per iteration; one SpMV is 3.1 ms)
    jacobi = LinearOperator(A.shape, matvec=lambda v: inverse_diagonal * v.ravel(), dtype=np.float64)
    amg: list = []  # built on first need: its set-up costs more than most Jacobi solves

    def amg_preconditioner():
        if not amg:
            import pyamg  # only ill-conditioned problems need it

            amg.append(pyamg.smoothed_aggregation_solver(A, symmetry="symmetric").aspreconditioner())
        return amg[0]

    def count(_x):
        # scipy's cg calls back once per iteration, and each iteration is one product
        # with A (plus one preconditioner application).
        work.cg_iterations = (work.cg_iterations or 0) + 1

    def solve(B, x0=None):
        # column-major, so that each right-hand side B[:, j] is a contiguous vector
        B = np.asfortranarray(np.asarray(B, dtype=np.float64).reshape(A.shape[0], -1))
        X0 = None if x0 is None else np.asfortranarray(np.asarray(x0, dtype=np.float64).reshape(B.shape))
        out = np.empty_like(B)
        # CG's dot products are level-1 BLAS on single vectors: OpenBLAS's threads only add
        # synchronisation, and on a loaded 2-core machine made an iteration on 100k nodes
        # take 24 ms instead of 3.1 ms (one SpMV: 2.5 ms). One BLAS thread for the loop.
        with _one_blas_thread():
            for j in range(B.shape[1]):  # one CG per right-hand side (classes or labels)
                x, info = None, 1
                if method == "cg":
                    x, info = cg(A, B[:, j], x0=None if X0 is None else X0[:, j], rtol=rtol,
                                 maxiter=JACOBI_MAX_ITERATIONS, M=jacobi, callback=count)
                if info != 0:
                    work.amg_fallbacks += method == "cg"
                    x, info = cg(A, B[:, j], x0=x, rtol=rtol, maxiter=1000, M=amg_preconditioner(),
                                 callback=count)
                if info != 0:
                    raise RuntimeError(f"CG did not converge (info={info}) on column {j}")
                out[:, j] = x
        return out

    work = _Work(cg_iterations=0)  # over every right-hand side solved so far
    return _CountedSolve(solve, work)


class _System(NamedTuple):
    """One harmonic solve: the solution and the pieces the leave-one-out step reuses."""

    F: np.ndarray  # n × C solution (labelled rows = their clamped values)
    u: np.ndarray  # kept unlabelled nodes: the unknowns (unlabelled, in a component with a label)
    l: np.ndarray  # labelled nodes
    scale: np.ndarray  # s = (d + γ_g)^-½ on u, 0 elsewhere (float32 after the block CG, else float64)
    degree: np.ndarray  # (1 + γ_d) d, d = W 1: the system's diagonal without γ_g
    counts: dict  # cg_iterations (column products), cg_block_iterations, amg_fallbacks, cg_stop


# Edges lighter than this share of the heaviest are dropped before solving (see _resolvable).
NEGLIGIBLE_WEIGHT = 1e-12


def _resolvable(W: sp.csr_matrix) -> sp.csr_matrix:
    """W without the edges float64 cannot resolve next to the others.

    A group of nodes joined to the rest only by near-zero weights (Gaussian weights of an
    outlier cluster reach 1e-33 on segment) makes L_uu singular to working precision: its
    rows are d_i − Σ_j W_ij with d_i ≈ 1 and the difference ≈ 1e-33, and SuperLU returned
    values of 1e23 there. Dropping those edges makes such a group a component of its own:
    reached by no label, it gets no label (confidence 0), as the contract says, instead of
    garbage. A single node whose every edge is dropped is not such a group: it takes its
    solved neighbours' harmonic value after the solve (``_attach_faint_nodes``).
    """
    if W.nnz == 0 or W.data.min() >= NEGLIGIBLE_WEIGHT * W.data.max():
        return W
    W = W.copy()
    W.data[W.data < NEGLIGIBLE_WEIGHT * W.data.max()] = 0.0
    W.eliminate_zeros()
    return W


def _attach_faint_nodes(W_given: sp.csr_matrix, W: sp.csr_matrix, F: np.ndarray, labeled: np.ndarray,
                        gamma_d: float) -> np.ndarray:
    """Rows of F for the unlabelled nodes that ``_resolvable`` cut off entirely: each takes the
    harmonic value of its solved neighbours, F_i = Σ_j w_ij F_j / ((1 + γ_d) Σ_j w_ij), with its
    own weights divided by its heaviest edge first, so that weights of 1e-20 are no smaller than
    weights of 1 (returns the indices of the nodes set).

    Why: an outlier whose every edge is negligible next to the graph's heaviest (digits z-scored,
    ``build-graph``'s default scaling: two nodes with Gaussian weights of 1e-20 to 1e-18) was
    left out with the edges, and got no label while all ten of its neighbours had one. Its
    edges are below float64's resolution in its neighbours' equations, so its neighbours'
    values are what the solve without it gives; its own equation only needs its weights
    relative to each other. One pass: a node whose solved neighbours are all faint too stays
    without a label. A cluster joined by negligible weights (``_resolvable``) is not attached:
    its nodes have heavy edges among themselves, and so are not cut off entirely.
    """
    reached = np.einsum("ij->i", F) > 0
    # unlabelled nodes with edges in W_given and none left in W (the resolvable graph)
    faint = np.flatnonzero(~labeled & (np.diff(W.indptr) == 0) & (np.diff(W_given.indptr) > 0))
    if faint.size == 0:
        return faint
    R = W_given[faint].multiply(reached[None, :]).tocsr()  # edges to solved nodes only
    R.eliminate_zeros()
    has = np.diff(R.indptr) > 0
    if not has.any():
        return faint[:0]
    R, faint = R[has], faint[has]
    R = sp.diags(1.0 / R.max(axis=1).toarray().ravel()) @ R
    F[faint] = (R @ F) / ((1.0 + gamma_d) * np.asarray(R.sum(axis=1)))
    return faint


def _reachable(component: np.ndarray, labeled: np.ndarray) -> np.ndarray:
    """Mask of the nodes whose connected component holds a labelled node."""
    has_label = np.zeros(component.max() + 1, dtype=bool)
    has_label[component[labeled]] = True
    return has_label[component]


def _jacobi_scale(u_mask: np.ndarray, degree: np.ndarray, gamma_g: float, dtype) -> np.ndarray:
    """s = (d + γ_g)^-½ on the unknowns, 0 elsewhere, in ``dtype``."""
    s = np.zeros(len(u_mask), dtype=dtype)
    s[u_mask] = 1.0 / np.sqrt(degree[u_mask] + gamma_g)
    return s


def _scaled_operator(W: sp.csr_matrix, s: np.ndarray) -> sp.csr_matrix:
    """K = S W S, S = diag(s), in s's precision.

    K keeps W's index arrays (no copy of the graph's structure; only its values are
    scaled), and its rows and columns outside the unknowns are zero, so CG on I − K needs no
    slice of W: the labelled and unreachable rows of every iterate stay 0. (Slicing L_uu out
    of L = D − W took three copies of the graph.)
    """
    data = W.data.astype(s.dtype)
    data *= np.repeat(s, np.diff(W.indptr))
    data *= s[W.indices]
    return sp.csr_matrix((data, W.indices, W.indptr), shape=W.shape)


def _uu_system(W, u, l, degree, gamma_g):
    """A = L_uu + γ_g I = diag(d_u + γ_g) − W_uu and W_ul, sliced out (direct and float64 solves)."""
    W_u = W[u]
    A = (sp.diags(degree[u] + gamma_g) - W_u[:, u]).tocsr()
    return A, W_u[:, l].tocsr()


def _solve_system(W, Y_l, labeled, *, gamma_g, solver, direct_max_nodes, rtol, x0=None, degree=None,
                  reachable=None, mass_target=None, stop="rtol") -> _System:
    """The harmonic solution F (n × C) with F_l = Y_l on the nodes a label reaches.

    ``Y_l`` holds the clamped rows of the labelled nodes (in node order). ``mass_target`` (C
    class weights or None): CG's labels (the coarse space's regions and ``stop="labels"``)
    are the arg-max of F with each class column scaled to that share of the total mass
    (None: the plain arg-max), as the prediction will take them.
    """
    n, C = W.shape[0], Y_l.shape[1]
    if degree is None:
        degree = np.asarray(W.sum(axis=1)).ravel()
    if reachable is None:
        reachable = _reachable(graph_components(W, symmetric=True), labeled)
    u_mask = ~labeled & reachable
    u, l = np.flatnonzero(u_mask), np.flatnonzero(labeled)
    method = solver if solver != "auto" else "direct" if len(u) <= direct_max_nodes else "cg"
    block = method == "cg" and rtol >= FLOAT32_RTOL  # all columns at once in float32 (_block_cg)
    s = _jacobi_scale(u_mask, degree, gamma_g, np.float32 if block else np.float64)
    counts = {"cg_iterations": None, "cg_block_iterations": 0, "amg_fallbacks": 0, "cg_stop": None}
    if len(u) == 0:
        F = np.zeros((n, C))
        F[l] = Y_l
        return _System(F, u, l, s, degree, counts)
    # W_{·l} Y_l (W is symmetric): the unknowns' rows are W_ul Y_l. Sparse: nonzero only next
    # to a label (1M-node graph, 1% labelled: 17% of the rows), where a dense n × C float64
    # block was 80 MB held through the solve.
    B = (W[l].T @ sp.csr_matrix(Y_l)).tocoo()
    pending = np.arange(C)
    if block:
        weights = np.ones(C, dtype=np.float32) if mass_target is None else None

        def labels_of(X, scale, previous=None):
            # column sums of F_u = s X (rows outside u are 0; ``scale`` is s in X's row order),
            # then the weighted arg-max; s_i > 0 scales a row and leaves its arg-max alone
            if weights is None:
                mass = scale @ X
                w = np.divide(mass_target, mass, out=np.zeros(C, dtype=np.float32), where=mass > 0)
            else:
                w = weights
            # by slices of rows: the scaled copy of X is then a slice's, not a third of the
            # block CG's memory beside its four blocks (the labels are the same)
            step = max(1, LABEL_SLICE // C)
            if len(X) <= step:
                return _weighted_labels(X, w, previous)
            slices = [slice(a, a + step) for a in range(0, len(X), step)]
            return np.concatenate([_weighted_labels(X[rows], w, None if previous is None else previous[rows])
                                   for rows in slices])

        with _one_blas_thread():
            # the operator, the right-hand side and the start (x̂ = S⁻¹ x, rounded to float32 as
            # it is divided) are built in the call: _block_cg then holds the only reference to
            # each, frees the node-order K once it has regrouped the rows and the start once
            # it has its padded copy
            X, converged, iterations, products, reason = _block_cg(
                _scaled_operator(W, s),
                sp.coo_matrix((np.multiply(s[B.row], B.data, dtype=np.float32), (B.row, B.col)), shape=B.shape),
                None if x0 is None else np.divide(x0, s[:, None], out=np.zeros((n, C), dtype=np.float32),
                                                  where=s[:, None] > 0, casting="same_kind"),
                rtol, JACOBI_MAX_ITERATIONS, labels_of, s, stop_on_labels=stop == "labels")
        F = np.multiply(X, s[:, None], dtype=np.float64)  # x = S x̂; 0 outside the unknowns
        counts.update(cg_iterations=iterations * C, cg_block_iterations=iterations, cg_block_products=products,
                      cg_stop=reason)
        pending = np.flatnonzero(~converged)
        x0 = F if pending.size else None
    else:
        F = np.zeros((n, C))
    F[l] = Y_l
    if pending.size:
        A, _ = _uu_system(W, u, l, degree, gamma_g)
        solve_uu = _spd_solver(A, method, direct_max_nodes, rtol)
        F[np.ix_(u, pending)] = solve_uu(B.tocsr()[u][:, pending].toarray(),
                                         None if x0 is None else x0[np.ix_(u, pending)])
        if solve_uu.cg_iterations is not None:
            counts["cg_iterations"] = (counts["cg_iterations"] or 0) + solve_uu.cg_iterations
        counts["amg_fallbacks"] += solve_uu.amg_fallbacks
    return _System(F, u, l, s, degree, counts)


def _near(W: sp.csr_matrix, seeds: np.ndarray, inside: np.ndarray, hops: int) -> np.ndarray:
    """Mask of the nodes of ``inside`` within ``hops`` edges of a seed (seeds in ``inside``),
    walking through ``inside`` only (a clamped label absorbs the walk: nothing passes it).
    One row slice of W per hop, of the frontier's rows only."""
    near = np.zeros(W.shape[0], dtype=bool)
    frontier = seeds[inside[seeds]]
    near[frontier] = True
    for _ in range(hops):
        reached = np.unique(W[frontier].indices)
        frontier = reached[inside[reached] & ~near[reached]]
        if frontier.size == 0:
            break
        near[frontier] = True
    return near


def _resolve(W, system: _System, start: np.ndarray, clamped: np.ndarray, Y_clamped: np.ndarray,
             changed: np.ndarray, reachable: np.ndarray, mass_target, hops: int, kw: dict):
    """Solve again after the clamps of the ``changed`` labels changed: softened (``clamped``
    still holds them, ``start`` their new rows) or dropped (``clamped`` no longer does, ``start``
    their leave-one-out estimates), warm-started from ``start``, the first solution.

    Near them only (``_resolve_near``) from ``RESOLVE_NEAR_MIN_NODES`` unknowns up, when no
    component lost its labels; else, or when that region is too large, the whole system.
    Returns the new system and the local re-solve's facts (None after a whole re-solve).
    """
    start[~reachable] = 0.0  # a component whose labels were all dropped: no label
    if (hops > 0 and len(system.u) >= RESOLVE_NEAR_MIN_NODES and system.scale.dtype == np.float32
            and reachable.sum() == len(system.u) + len(system.l)):
        local = _resolve_near(W, system, start, clamped, changed, kw["gamma_g"], kw["rtol"], hops, RESOLVE_MAX_SHARE)
        if local is not None:
            return local
    return _solve_system(W, Y_clamped, clamped, x0=start, reachable=reachable, mass_target=mass_target, **kw), None


def _resolve_near(W, system: _System, start: np.ndarray, clamped: np.ndarray, changed: np.ndarray, gamma_g: float,
                  rtol: float, hops: int, max_share: float) -> tuple[_System, dict] | None:
    """The re-solve after the ``changed`` labels' clamps changed, on the nodes near them only;
    None when that region holds more than ``max_share`` of the nodes (the caller then solves
    the whole system). A changed label that ``clamped`` no longer holds (dropped) becomes an
    unknown; one it still holds (softened) is a boundary value, its new row in ``start``.

    Changing a label's clamp changes the right-hand side only at it and its neighbours, and
    the change of the solution decays away from it (the walk from a far node is absorbed by
    the other labels or the degree sink before it meets a changed one). So the unknowns R
    within ``hops`` edges of a changed label are solved again with the rest held at ``start``
    (the first solution, with the changed labels' new rows), a Dirichlet boundary:
    (D'_RR − W_RR) f_R = W_{R,·∖R} start, by the same float32 block CG (Jacobi-scaled,
    started from ``start``, to ``rtol``) on the |R| × |R| system. Measured on the 100k-node
    graph of bench/solver_scale.py (1,000 labels, 2 flagged): see the module docstring
    ("The re-solve after the flagged labels"). Returns the new system (F is ``start``,
    updated in place) and what it cost.
    """
    n, C = start.shape
    u_mask = np.zeros(n, dtype=bool)
    u_mask[system.u] = True
    u_mask[changed[~clamped[changed]]] = True  # dropped labels are unknowns now
    passable = u_mask.copy()
    passable[changed] = True
    region = _near(W, changed, passable, hops) & u_mask
    r = np.flatnonzero(region)
    if r.size > max_share * n:
        return None
    W_r = W[r]
    # the boundary's pull: W_{R,·} start less the region's own part (start holds the labels' clamped rows)
    W_rr = W_r[:, r]
    rhs = W_r @ start - W_rr @ start[r]
    scale = np.zeros(n, dtype=system.scale.dtype)
    scale[u_mask] = 1.0 / np.sqrt(system.degree[u_mask] + gamma_g)
    s = scale[r]
    data = W_rr.data.astype(np.float32)
    data *= np.repeat(s, np.diff(W_rr.indptr))
    data *= s[W_rr.indices]
    K = sp.csr_matrix((data, W_rr.indices, W_rr.indptr), shape=W_rr.shape)

    def no_labels(X, _scale, _previous=None):  # no coarse space: a start vector and a small region need none
        return np.full(len(X), -1)

    with _one_blas_thread():
        X, _, iterations, products, reason = _block_cg(
            K, s[:, None] * rhs, start[r] / s[:, None], rtol, JACOBI_MAX_ITERATIONS, no_labels, s,
            stop_on_labels=False)
    start[r] = s[:, None] * X
    counts = {**system.counts, "cg_iterations": None, "cg_block_iterations": 0, "cg_block_products": 0,
              "cg_stop": None, "amg_fallbacks": 0}
    return (_System(start, np.flatnonzero(u_mask), np.flatnonzero(clamped), scale, system.degree, counts),
            {"nodes": int(r.size), "iterations": int(iterations), "stop": reason})


def harmonic_scores(
    W: sp.csr_matrix,
    Y: np.ndarray,
    labeled: np.ndarray,
    *,
    gamma_g: float = 0.0,
    solver: str = "auto",
    direct_max_nodes: int = 10_000,
    rtol: float = 1e-8,
):
    """Regularised harmonic solution F (n × C) with F_l = Y_l, F_u = (L_uu + γ_g I)⁻¹ W_ul Y_l.

    Nodes that no labelled node reaches are left out of the system and get F = 0. ``Y`` is
    (n, C), of which only the labelled rows are read, or those rows alone, (l, C) in node
    order (an n × C array of zeros is two blocks of float32 a caller need not hold).

    Returns
    -------
    F : array, shape (n, C)
    solve_uu : callable B ↦ (L_uu + γ_g I)⁻¹ B on the kept unlabelled nodes (set up on its
        first call)
    unlabelled : array of int, the kept unlabelled node indices (the rows solve_uu works on)
    """
    W = _resolvable(W).tocsr()
    labeled = np.asarray(labeled, dtype=bool)
    Y = np.asarray(Y, dtype=np.float64)
    Y_l = Y[labeled] if len(Y) == len(labeled) else Y
    if len(Y_l) != np.count_nonzero(labeled):
        raise ValueError(f"Y has {len(Y)} rows: give one per node ({len(labeled)}) or per labelled node "
                         f"({np.count_nonzero(labeled)})")
    system = _solve_system(W, Y_l, labeled, gamma_g=gamma_g, solver=solver,
                           direct_max_nodes=direct_max_nodes, rtol=rtol)
    return system.F, _uu_solver(W, system, gamma_g, solver, direct_max_nodes, rtol), system.u


def _uu_solver(W, system: _System, gamma_g, solver, direct_max_nodes, rtol) -> _CountedSolve:
    """B ↦ (L_uu + γ_g I)⁻¹ B on the system's unknowns (float64 CG or SuperLU), set up on the
    first call (a factorisation or a slice of W that a caller may never need)."""
    built: list[_CountedSolve] = []

    def solve_uu(B, x0=None):
        if len(system.u) == 0:
            return B
        if not built:
            A, _ = _uu_system(W, system.u, system.l, system.degree, gamma_g)
            built.append(_spd_solver(A, solver, direct_max_nodes, rtol))
        X = built[0](B, x0)
        work.cg_iterations = built[0].cg_iterations
        work.amg_fallbacks = built[0].amg_fallbacks
        return X

    work = _Work(cg_iterations=0)
    return _CountedSolve(solve_uu, work)


def _leave_one_out(W, Y_l, system: _System, gamma_g, solve_uu, chunk: int = 256) -> np.ndarray:
    """Exact leave-one-out solution at each labelled node, shape (l, C).

    Unclamping labelled node i adds it to the unknowns; by the Schur complement of the
    block system [[A, -w], [-wᵀ, d_i + γ_g]] with A = L_uu + γ_g I and w = W_ui:

        f_i = (b_i + wᵀ A⁻¹ b_u) / (d_i + γ_g − wᵀ A⁻¹ w),

    where b = W_{·,l∖i} Y_{l∖i}. Since A⁻¹ b_u = F_u − A⁻¹ w Y_i, all labels need only
    the solves A⁻¹ W_ul, done in chunks of columns: one solve per given label.
    """
    u, l = system.u, system.l
    W_ul = W[u][:, l].tocsc()
    s = np.zeros(len(l))
    for start in range(0, len(l), chunk):  # chunks of labels bound the n_u × chunk memory
        cols = slice(start, min(start + chunk, len(l)))
        w = W_ul[:, cols].toarray()  # n_u × m
        Aw = solve_uu(w).reshape(len(u), -1) if len(u) else w  # every node labelled: w is 0 × m
        s[cols] = np.einsum("ij,ij->j", w, Aw)  # wᵀ A⁻¹ w
    return _unclamped(W, Y_l, system, gamma_g, s)


def _unclamped(W, Y_l, system: _System, gamma_g, s) -> np.ndarray:
    """f_i of the Schur formula above for every label, given s_i = wᵢᵀ A⁻¹ wᵢ.

    wᵀ A⁻¹ b_u = wᵀ F_u − s_i Y_i, so f_i = (W_i· F − s_i Y_i) / (d_i + γ_g − s_i): the
    weighted vote of i's neighbours with i's own echo (s_i Y_i, the walks from its
    neighbours that come back to i) taken out.
    """
    l = system.l
    votes = W[l] @ system.F  # W_il Y_l + W_iu F_u (W_ii = 0, so i's own label is not in it)
    denom = system.degree[l] + gamma_g - s
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom[:, None] > 1e-12, (votes - s[:, None] * Y_l) / denom[:, None], 0.0)


def _local_leave_one_out(W, Y_l, system: _System, gamma_g, labeled_component) -> tuple[np.ndarray, dict]:
    """Leave-one-out at each labelled node with s_i = wᵢᵀ A⁻¹ wᵢ estimated, not solved for.

    s_i is the weight of the walks from i's unlabelled neighbours that are absorbed back at
    i (A⁻¹wᵢ is the probability of ending at i). Writing A = D' − W_uu (D' = d_u + γ_g),
    A⁻¹ = Σ_t (D'⁻¹W_uu)^t D'⁻¹, and with B = D'^-½ W_ul, K = D'^-½ W_uu D'^-½:

    - the returns within 2, 3 and 4 steps, S_ii = (BᵀB + BᵀKB + (KB)ᵀ(KB))_ii, are summed
      exactly (sparse products: KB has about k² entries per label);
    - the rest (longer walks) is the tail of class y_i's absorption that the short walks
      do not explain: tail_i = R_{i,y} − Σ_{j of class y} S_ij, with R = W_lu F_u read off
      the solution (Σ_j (wᵢᵀA⁻¹wⱼ) Y_j = wᵢᵀ F_u). i's own share of that tail lies between
      its share of the class's labels weighted by their unlabelled degree (long walks mixed
      over the class's labels in the component: an underestimate) and its share of the
      class's short-walk returns S_ii / Σ_j S_ij (long walks split like short ones: an
      overestimate); the estimate takes their geometric mean. Against the exact s_i on
      digits (10 labels per class, 5 seeds) the estimate correlates at 0.92 and changes 1
      of 100 flags at 10% flipped; the degree share alone 2, the short walks alone 2.

    s_i then goes into the exact formula (``_unclamped``). Cost: a few sparse products with
    B (nnz ≈ edges at labels), independent of the number of classes; no solve. B, K and the
    products live in node numbering (K's rows outside the unknowns are 0): no slice of W.
    """
    l, u = system.l, system.u
    C = Y_l.shape[1]
    y_l = np.argmax(Y_l, axis=1)
    rows = np.arange(len(l))
    own = Y_l[rows, y_l]  # the label's trust (1 unless label_confidence says less)
    if len(u) == 0:
        return _unclamped(W, Y_l, system, gamma_g, np.zeros(len(l))), {"loo": "local"}
    scale = system.scale.astype(np.float64)  # float32 after the block CG: the estimate in float64
    W_l = W[l]  # l × n: W_lu with the other labels' columns (zeroed by the scale below)
    # own index arrays: eliminate_zeros compacts them in place, and W_l is read again below
    B_t = sp.csr_matrix((W_l.data * scale[W_l.indices], W_l.indices.copy(), W_l.indptr.copy()), shape=W_l.shape)
    B_t.eliminate_zeros()
    B = B_t.T  # n × l (CSC), D'^-½ W_ul in node numbering
    # KB = (Bᵀ K)ᵀ (K is symmetric): a product over the labels' rows, each pulling the rows of K
    # at its neighbours (about k² entries per label), where K B ran over all of K's rows. On the
    # 100k-node graph of bench/solver_scale.py (1,000 labels) this function took 66 ms against
    # 97 ms (medians of 15, interleaved, same process). S = BᵀB + BᵀKB + (KB)ᵀ(KB) as one
    # l × l sparse matrix (its diagonal and S Y_l) took 105 ms against 70 ms for these lines at 10
    # classes: it is kept for many classes only (SHORT_WALKS_BY_LABEL_PAIRS, below).
    # Bᵀ K = (Bᵀ S) W S with W itself (float64, as the graph comes): no float64 copy of K's values
    # (1.7M on that graph) for one product.
    B_s = sp.csr_matrix((B_t.data * scale[B_t.indices], B_t.indices, B_t.indptr), shape=B_t.shape)
    KB_t = B_s @ W
    KB_t.data *= scale[KB_t.indices]
    KB = KB_t.T
    # diag(BᵀB) and diag((KB)ᵀ KB) are row sums of squared values of B_t and KB_t; only the cross
    # term needs an elementwise product of two sparse matrices (scipy's costs a pass over all n
    # columns per call: three of them were 13 of this function's 54 ms in one profile)
    S_ii = (_row_sums(B_t, B_t.data**2) + _row_sums(KB_t, KB_t.data**2)
            + np.asarray(B_t.multiply(KB_t).sum(axis=1)).ravel())
    # Σ_j S_ij Y_j for every class: the same three terms applied to Y_l. K is symmetric, so
    # Bᵀ K² B Y = (KB)ᵀ (KB Y): products with the sparse B and KB only (nnz ≈ k and k² per
    # label), where K (BY) and K (K BY) were two n × C products with the whole graph (on the
    # 100k-node graph of bench/solver_scale.py two thirds of this function's time).
    # KB Y and the three products below on several threads, KB Y as a product over KB's rows
    # (scipy's product with the CSC KB scatters over its columns, on one thread): at 1M nodes
    # (10k labels, KB 4.4M entries, 2 cores) KB Y took 69 against 109 ms and the three products
    # 60 against 129 ms (line profiler), the same values bit for bit (rows summed in one order)
    if C >= SHORT_WALKS_BY_LABEL_PAIRS:
        # S = BᵀB + BᵀKB + (KB)ᵀKB, l × l (labels within 4 hops of each other), then S Y_l: no
        # n × C array. The products below make two n × C float64 ones, which at many classes
        # outweigh the sparse products (on bench/harmonic_paired.py's 100k-node graphs, medians
        # of 5 in one process: 0.031 against 0.054 s at 10 classes, 0.038 against 0.045 at 25,
        # 0.088 against 0.054 at 50, 0.24 against 0.13 at 500; the same values within 6e-17)
        short_rows = (B_t @ B + (B_t + KB_t) @ KB) @ Y_l
    else:
        BY = B @ Y_l
        KBY = RowSplitProduct(KB.tocsr()) @ Y_l
        # three products with the sparse rows, not the sum BY + KBY: that was one more n × C array
        # (at 1M nodes 80 MB; these lines took 259 against 345 ms there, 11 against 16 ms at 100k)
        B_rows, KB_rows = RowSplitProduct(B_t), RowSplitProduct(KB_t)
        short_rows = B_rows @ BY + B_rows @ KBY + KB_rows @ KBY
    unknown = (scale > 0).astype(np.float64)
    R = W_l @ system.F - W_l[:, l] @ Y_l  # W_lu F_u (F is 0 off the unknowns and the labels)
    tail = np.maximum(R[rows, y_l] - short_rows[rows, y_l], 0.0)
    unlabeled_degree = W_l @ unknown
    group = labeled_component * C + y_l  # a class's labels within one component
    _, group = np.unique(group, return_inverse=True)
    group_degree = np.bincount(group, unlabeled_degree)[group]
    share_degree = np.divide(unlabeled_degree, group_degree, out=np.zeros(len(l)), where=group_degree > 0)
    short_own = S_ii * own
    share_short = np.divide(short_own, short_rows[rows, y_l], out=np.ones(len(l)),
                            where=short_rows[rows, y_l] > 0)
    share = np.sqrt(np.clip(share_degree, 0, 1) * np.clip(share_short, 0, 1))
    s = S_ii + np.divide(share * tail, own, out=np.zeros(len(l)), where=own > 0)
    return _unclamped(W, Y_l, system, gamma_g, s), {"loo": "local", "return_share": s}


def _row_sums(A: sp.csr_matrix, values: np.ndarray) -> np.ndarray:
    """Σ_j of ``values`` (one per stored entry of the CSR matrix A) along each row of A: a product
    with a vector of ones (on 393k entries 0.9 ms against 1.9 ms for a bincount of repeated row
    numbers)."""
    return sp.csr_matrix((values, A.indices, A.indptr), shape=A.shape) @ np.ones(A.shape[1])


LOO_METHODS = ("local", "exact")
CLASS_MASS = ("auto", "smoothed", "fading", "uniform", "labels", "none", "center")
#: "auto" takes the centred arg-max from this many labelled classes up, and from this share
#: of the nodes labelled (module docstring)
AUTO_CENTER_MIN_CLASSES = 3
AUTO_CENTER_MIN_SHARE = 0.07
# Checked once at the door (solvers/_validation.py).
PARAMETER_CONSTRAINTS = {
    "gamma_g": [Interval(Real, 0, None), Options((math.inf,))],
    "gamma_d": [Interval(Real, 0, None)],
    "noise_threshold": [Interval(Real, 0, 1, closed="right")],
    "solver": [Options(SOLVERS)],
    "loo": [Options(LOO_METHODS)],
    "class_mass": [Options(CLASS_MASS)],
    "stop": [Options(STOP_RULES)],
    "resolve_hops": [Interval(Integral, 0, None)],
    "noisy_labels": [Options(NOISY_LABEL_RULES)],
}
# class_mass="auto": the target share of class c is n_c + κ over the labelled classes (n_c its
# given labels), a symmetric Dirichlet prior of κ pseudo-labels per class (module docstring).
MASS_PSEUDO_LABELS = 100.0
# class_mass="fading" (an option): (1 − λ) n_c / n_l + λ / C over the labelled classes,
# λ = r / (r + MASS_FADING_RATIO), r the unlabelled nodes per given label (module docstring).
MASS_FADING_RATIO = 10.0
# A flagged label is softened or dropped in the re-solve only when its class keeps at least this many
# unflagged labels (module docstring: "What the re-solve does with a flagged label").
REVISE_MIN_UNFLAGGED = 3
# The re-solve after the flagged labels changed covers the nodes within ``resolve_hops`` edges of them
# (_resolve_near) unless that region holds more than this share of the nodes; then the whole
# system is solved again.
RESOLVE_MAX_SHARE = 0.25
# ... and only on graphs of at least this many unknowns (module docstring: below, the whole re-solve
# costs tens of milliseconds and its further iterations were worth up to 0.004 of accuracy).
RESOLVE_NEAR_MIN_NODES = 50_000


def _mass_rule(class_mass: str, n_labelled_classes: int, labelled_share: float) -> str:
    """The rule ``class_mass`` names (``info["class_mass"]``): "auto" is the centred arg-max
    with three or more labelled classes and at least ``AUTO_CENTER_MIN_SHARE`` of the nodes
    labelled, else the smoothed prior (module docstring)."""
    if class_mass == "auto":
        dense = n_labelled_classes >= AUTO_CENTER_MIN_CLASSES and labelled_share >= AUTO_CENTER_MIN_SHARE
        return "center" if dense else "smoothed"
    return class_mass


def class_mass_rule(problem: LabelProblem, class_mass: str = "auto") -> str:
    """The rule ``class_mass`` names on the whole of ``problem``, for a caller that solves
    it in parts (a run's batches of connected components): passed to each part, it keeps
    one rule for the run, where "auto" would read each batch's own labelled share, and so
    depend on which components were packed together."""
    labelled = int(np.count_nonzero(problem.labeled))
    return _mass_rule(class_mass, int(np.count_nonzero(problem.class_label_counts)),
                      labelled / max(problem.n_nodes, 1))


def _flag_mass_rule(class_mass: str) -> str:
    """The rule of the scale the noise flags read the leave-one-out distributions on, and the
    confidences and scores are given on: the smoothed prior for "auto", "fading" and "center"
    (module docstring: on the fading scale flag F1 fell where the flipped labels themselves
    move the class counts it follows; on the unscaled one "center" lost 1.3-2.0 points to the
    smoothed prior with 6 of 60 labels wrong)."""
    return "smoothed" if class_mass in ("auto", "fading", "center") else class_mass


def _mass_target(rule: str, y: np.ndarray, labeled: np.ndarray, n_classes: int) -> np.ndarray | None:
    """Target class shares q_c of class mass normalisation for ``rule`` (None: no normalisation;
    "center" shifts the arg-max instead, ``_class_mass_offset``)."""
    if rule in ("none", "center"):
        return None
    counts = np.bincount(y[labeled], minlength=n_classes).astype(float)
    if rule == "fading":
        n_labelled = max(counts.sum(), 1.0)
        per_label = (len(y) - n_labelled) / n_labelled  # r: the nodes each given label speaks for
        fade = per_label / (per_label + MASS_FADING_RATIO)
        present = counts > 0
        return np.where(present, (1.0 - fade) * counts / n_labelled + fade / max(present.sum(), 1), 0.0)
    if rule == "smoothed":
        return np.where(counts > 0, counts + MASS_PSEUDO_LABELS, 0.0)
    return counts if rule == "labels" else (counts > 0).astype(float)


def _class_mass_weights(system: _System, target: np.ndarray | None) -> np.ndarray:
    """Column weights of class mass normalisation (Zhu et al. 2003, Sec. 4): w_c = q_c / m_c,
    m_c the class's mass Σ_u F_uc over the system's unknowns, q_c its target share."""
    C = system.F.shape[1]
    if target is None or len(system.u) == 0:
        return np.ones(C)
    mass = _unknown_mass(system)
    return np.divide(target, mass, out=np.zeros(C), where=mass > 0)


def _unknown_mass(system: _System) -> np.ndarray:
    """Each class's mass Σ_u F_uc over the system's unknowns."""
    # F is 0 off the unknowns and the labels: the unknowns' mass without a gather of their rows
    return system.F.sum(axis=0) - system.F[system.l].sum(axis=0)


def _class_mass_offset(system: _System) -> np.ndarray:
    """``class_mass="center"``: each class's mean absorption probability over the unknowns,
    subtracted from its column before the arg-max (scikit-network's ``DiffusionClassifier``
    centres its columns so; there over all nodes, here over the nodes being labelled)."""
    if len(system.u) == 0:
        return np.zeros(system.F.shape[1])
    return _unknown_mass(system) / len(system.u)


def _finish(F: np.ndarray, weights: np.ndarray, temperature: float, offset: np.ndarray | None = None):
    """Labels and confidences from F: the arg-max of F scaled by the class-mass weights (of F
    less ``offset`` per column when an offset is given, "center"), and the chosen class's share
    p^(1/T) / Σ_c p_c^(1/T) of the scaled, normalised row (``sharpen``), computed in place on
    one n × C array. A row of F that is all 0 (no label reaches it) gets label -1 and
    confidence 0."""
    G = F * weights
    np.clip(G, 0.0, None, out=G)  # CG may leave -1e-17 where the exact value is 0
    # Row sums by einsum: numpy's sum over rows of C values took 2.2-2.6 ms on 100k × 10 (float64),
    # einsum 0.75 ms.
    total = np.einsum("ij->i", G)
    labels = np.argmax(G if offset is None else F - offset, axis=1).astype(np.int64)
    flat = np.arange(len(labels)) * G.shape[1] + labels
    if temperature == 1.0:
        top, total_sharp = np.take(G, flat), total
    else:
        np.divide(G, total[:, None], out=G, where=total[:, None] > 0)
        np.power(G, 1.0 / temperature, out=G)
        top, total_sharp = np.take(G, flat), np.einsum("ij->i", G)
    confidence = np.clip(np.divide(top, total_sharp, out=np.zeros(len(labels)), where=total_sharp > 0), 0.0, 1.0)
    no_label = np.einsum("ij->i", F) <= 0  # the contract of solvers._graph.finish_labels
    labels[no_label] = -1
    confidence[no_label] = 0.0
    return labels, confidence


def harmonic(
    problem: LabelProblem,
    *,
    gamma_g: float = 0.0,
    gamma_d: float = 0.03,
    class_mass: str = "auto",
    noise_threshold: float = 0.35,
    loo: str = "local",
    noisy_labels: str = "soften",
    detect_noise: bool = True,
    calibrate: bool = True,
    solver: str = "auto",
    direct_max_nodes: int = 1_000,
    rtol: float = 1e-4,
    stop: str = "labels",
    resolve_hops: int = 2,
) -> Prediction:
    """Label nodes with the (regularised) harmonic function and flag doubtful given labels.

    Parameters
    ----------
    problem : LabelProblem
    gamma_g : float, default 0
        Laplacian regulariser γ_g ≥ 0 of Kveton et al. (2010), eq. (4); 0 is the plain
        harmonic function of Zhu et al. (2003).
    gamma_d : float, default 0.03
        Degree sink γ_d ≥ 0: the system is L_uu + γ_g I + γ_d D_uu, so a walk dies with
        probability γ_d / (1 + γ_d) at each step; 0 with γ_g = 0 is the plain harmonic
        function (module docstring: why 0.03).
    class_mass : {"auto", "smoothed", "fading", "uniform", "labels", "none", "center"}, default "auto"
        Class mass normalisation (Zhu et al. 2003, Sec. 4): scale each class column so
        that the classes' total masses over the unlabelled nodes are equal (``"uniform"``)
        or proportional to the given labels' class counts (``"labels"``) before the
        arg-max; ``"none"`` takes the arg-max of the absorption probabilities;
        ``"smoothed"`` makes them proportional to n_c + 100 (n_c the class's given labels:
        a smoothed prior). ``"center"`` subtracts each class's mean absorption probability
        over the unlabelled nodes from its column before the arg-max
        (``info["class_mass_offset"]``); its probabilities, confidences and noise flags are
        on the smoothed scale. ``"auto"`` is ``"center"`` when the run's given labels hold
        three or more classes and label 7% or more of the nodes, else ``"smoothed"``
        (``info["class_mass"]`` says which; module docstring: the measurements behind it).
        ``"fading"`` makes the masses proportional to (1 − λ) n_c / n_l + λ / C,
        λ = r / (r + 10), r the unlabelled nodes per given label, and reads the noise flags on
        the smoothed scale: for clean labels of unequal classes with 10% or more of the nodes
        labelled; with wrong labels among 60 it lost up to 26 points (module docstring).
    noise_threshold : float in (0, 1], default 0.35
        A given label is flagged when, in its leave-one-out distribution, the best other
        class beats the given one by at least this margin (its ``noise_score``).
    loo : {"local", "exact"}, default "local"
        How the leave-one-out distributions are computed: ``"exact"`` solves once per given
        label; ``"local"`` estimates each label's self-return term (``_local_leave_one_out``)
        at the cost of a few sparse products. See the module docstring.
    noisy_labels : {"soften", "drop", "keep"}, default "soften"
        What the solve does again with the flagged labels (warm-started from the first
        solution): ``"soften"`` clamps each at its expected class distribution, the given
        class with weight 1 − m and its leave-one-out distribution with weight m (m its
        ``noise_score``); ``"drop"`` leaves them out; ``"keep"`` solves once and keeps them
        as given. A flagged label whose class keeps fewer than 3 unflagged labels stays as
        given (module docstring: "What the re-solve does with a flagged label").
    detect_noise : bool, default True
        Skip the leave-one-out step (and flag nothing) when False.
    calibrate : bool, default True
        Fit the confidence temperature on the leave-one-out distributions of the
        given labels (needs ``detect_noise``; otherwise T = 1).
    solver : {"auto", "direct", "cg", "amg"}
        "cg": Jacobi-preconditioned CG, switching to AMG for a right-hand side that
        converges slowly; "amg": AMG-preconditioned CG throughout.
    direct_max_nodes : int, default 1000
        "auto" uses SuperLU up to this many unknowns, "cg" above.
    rtol : float, default 1e-4
        Relative tolerance of CG (on each column's residual against its right-hand side).
        At 1e-5 or looser CG runs in float32 on all columns at once (``_block_cg``).
    stop : {"labels", "rtol"}, default "labels"
        When that block CG stops: once no node's label has changed for 2 iterations (up to
        1e-4 of the unknowns), or at ``rtol`` (module docstring: "Stopping").
        ``info["cg_stop"]`` says which, per solve.
    resolve_hops : int, default 2
        Unless ``noisy_labels="keep"``, on graphs of 50,000 unknowns or more: re-solve only the
        unknowns within this many edges of the flagged labels (``info["resolve_near"]``: its nodes and
        iterations), unless they are more than a quarter of the nodes; 0 always re-solves the
        whole system (module docstring: "The re-solve after the flagged labels").

    Returns
    -------
    Prediction
        ``scores`` are the absorption probabilities F (n × C); ``noise_score`` the margin of
        the best other class over the given one in each given label's leave-one-out
        distribution (NaN for unlabelled nodes); ``info["loo_scores"]`` those normalised
        leave-one-out distributions; ``info["timings"]`` the seconds of its steps: "graph" (the
        edges kept, degrees and components), "solve" (the harmonic solution),
        "leave_one_out" (the noise flags' estimate), "re_solve" (after the flagged labels
        changed) and "other" (the rest: checks, flags, class masses, calibration, labels).

    Raises
    ------
    SolverOutOfMemory
        Before anything is allocated, when the call's peak (``PEAK_BLOCKS`` or
        ``PEAK_BLOCKS_ONE_SOLVE`` blocks of n × C float32 and the graph's copies) exceeds the
        memory the process may take (``solvers/_memory.py``).
    """
    clock = Stopwatch()
    validate_params({"gamma_g": gamma_g, "gamma_d": gamma_d, "noise_threshold": noise_threshold, "solver": solver,
                     "loo": loo, "class_mass": class_mass, "stop": stop, "resolve_hops": resolve_hops,
                     "noisy_labels": noisy_labels},
                    PARAMETER_CONSTRAINTS)
    n, C = problem.n_nodes, problem.n_classes
    # its arrays' peak, asked before they exist ("The block CG's memory"): the whole re-solve
    # after the flags holds the first solution beside its own blocks
    # (_resolve's rule: the local re-solve needs hops and RESOLVE_NEAR_MIN_NODES unknowns)
    whole_resolve = (detect_noise and noisy_labels != "keep"
                     and (resolve_hops == 0 or n - np.count_nonzero(problem.labeled) < RESOLVE_NEAR_MIN_NODES))
    check_blocks("harmonic", n, C, PEAK_BLOCKS if whole_resolve else PEAK_BLOCKS_ONE_SOLVE, problem.W.nnz,
                 GRAPH_COPIES, "a score")
    with clock("graph"):
        W, y = _resolvable(problem.W).tocsr(), problem.y
    cut_edges = W.nnz < problem.W.nnz  # _resolvable dropped negligible edges: see _attach_faint_nodes
    labeled = problem.labeled
    l = np.flatnonzero(labeled)
    trust = problem.label_confidence[l] if problem.label_confidence is not None else np.ones(len(l))
    Y_l = np.zeros((len(l), C))
    Y_l[np.arange(len(l)), y[l]] = trust  # a label of trust c enters its class column with value c
    # (1 + γ_d) d: the diagonal of L_uu + γ_d D_uu without γ_g; every solve and the
    # leave-one-out's Schur formula read the diagonal from here
    with clock("graph"):
        degree = np.asarray(W.sum(axis=1)).ravel() * (1.0 + gamma_d)
        component = graph_components(W, symmetric=True)  # once: every solve and the estimate use it
    kw = dict(gamma_g=gamma_g, solver=solver, direct_max_nodes=direct_max_nodes, rtol=rtol, degree=degree,
              stop=stop)

    # the run's labelled classes (a batch of components follows the whole run's count) and
    # this problem's labelled share
    rule = _mass_rule(class_mass, int(np.count_nonzero(problem.class_label_counts)), len(l) / max(len(y), 1))
    target = _mass_target(rule, y, labeled, C)
    reachable = _reachable(component, labeled)  # the nodes some label reaches: the soft re-solve's too
    with clock("solve"):
        system = _solve_system(W, Y_l, labeled, reachable=reachable, mass_target=target, **kw)
    used = [system.counts]  # every solve of this call, for the CG iteration count
    noisy = np.zeros(len(y), dtype=bool)
    clamped = labeled  # the labels the final system holds (the class masses are taken over them)
    Y_clamped = Y_l
    noise_score = None
    info: dict = {"n_unknowns": int(len(system.u))}
    loo_label = None
    loo_scores = None
    if detect_noise:
        with clock("leave_one_out"):
            if loo == "exact":
                solve_uu = _uu_solver(W, system, gamma_g, solver, direct_max_nodes, rtol)
                unclamped = _leave_one_out(W, Y_l, system, gamma_g, solve_uu)
                used.append({"cg_iterations": solve_uu.cg_iterations, "amg_fallbacks": solve_uu.amg_fallbacks})
            else:
                unclamped, _ = _local_leave_one_out(W, Y_l, system, gamma_g, component[l])
        info["loo"] = loo
        # the leave-one-out distributions on the class-mass scale the predictions use
        flag_target = _mass_target(_flag_mass_rule(class_mass), y, labeled, C)
        loo_scores = normalise(normalise(unclamped) * _class_mass_weights(system, flag_target))
        margin = margin_scores(loo_scores, y[l])
        # A label alone in its class leaves the class no mass when it is left out: its margin
        # is the best other class's share whatever the label is worth, so nothing judges it.
        # Alone in the run (the problem's ``lone_labels``) it is not flagged: on weka's glass
        # and soybean at 10% labelled (seeds 0-2) this rule flagged 23 of 29 such labels, all
        # right, and their nodes lost their class. Alone only in an incremental region, with
        # labels of its class elsewhere in the run, the margin is evidence against it
        # (tests/test_incremental.py). When no class holds two (2- and 3-node problems)
        # nothing judges any label. Unjudged labels are neither flagged nor calibrated on;
        # their score stays the margin, for a person to rank.
        labels_per_class = np.bincount(y[l], minlength=C)
        unjudged = problem.lone_labels[l] | (labels_per_class.max(initial=0) < 2)
        flagged = (margin >= noise_threshold) & ~unjudged
        best_other = np.argmax(np.where(np.eye(C, dtype=bool)[y[l]], -np.inf, loo_scores), axis=1)
        noisy[l[flagged]] = True
        noise_score = per_label(len(y), labeled, margin)
        loo_label = (l[flagged], best_other[flagged])
        # a flagged label whose class keeps fewer than 3 unflagged ones stays as given (module docstring)
        revised = flagged & (np.bincount(y[l][~flagged], minlength=C)[y[l]] >= REVISE_MIN_UNFLAGGED)
        resolved = None
        start = system.F  # the first solution, its rows of the revised labels changed below
        if noisy_labels == "drop" and revised.any():
            kept = labeled.copy()
            kept[l[revised]] = False
            if len(set(y[kept].tolist())) >= 2:
                clamped, Y_clamped = kept, Y_l[~revised]
                start[l[revised]] = unclamped[revised]  # the dropped labels' own estimates
                with clock("re_solve"):
                    resolved = _resolve(W, system, start, clamped, Y_clamped, l[revised],
                                        _reachable(component, kept), _mass_target(rule, y, kept, C), resolve_hops, kw)
        elif noisy_labels == "soften" and revised.any():
            # the expected class distribution: the given class with weight 1 − m, the label's
            # leave-one-out distribution with weight m (m its margin; a label of trust c keeps c)
            doubt = margin[revised][:, None]
            Y_clamped = Y_l.copy()
            Y_clamped[revised] = (1.0 - doubt) * Y_l[revised] + doubt * trust[revised][:, None] * loo_scores[revised]
            start[l[revised]] = Y_clamped[revised]
            with clock("re_solve"):
                resolved = _resolve(W, system, start, clamped, Y_clamped, l[revised], reachable, target,
                                    resolve_hops, kw)
        if resolved is not None:
            system, near = resolved
            if near is None:
                used.append(system.counts)
            else:
                info["resolve_near"] = near
            info["n_unknowns"] = int(len(system.u))
    # CG iterations over all solves (classes, leave-one-out columns, the re-solve): each is
    # one product with L_uu + γ_g I. None when SuperLU solved instead (no iterations).
    counts = [c["cg_iterations"] for c in used]
    info["cg_iterations"] = None if all(c is None for c in counts) else int(sum(c or 0 for c in counts))
    info["cg_block_iterations"] = int(sum(c.get("cg_block_iterations", 0) for c in used))
    info["cg_block_products"] = int(sum(c.get("cg_block_products", 0) for c in used))
    info["cg_stop"] = [c["cg_stop"] for c in used if c.get("cg_stop")]
    info["amg_fallbacks"] = int(sum(c["amg_fallbacks"] for c in used))
    info["class_mass"] = rule
    # "center" reads its arg-max off the unscaled F less the offset; its confidences and scores
    # are on the smoothed scale its noise flags and temperature read (_flag_mass_rule)
    scale = _flag_mass_rule(class_mass) if rule == "center" else rule
    mass = _class_mass_weights(system, _mass_target(scale, y, clamped, C))
    info["class_mass_weights"] = mass
    offset = _class_mass_offset(system) if rule == "center" else None
    if offset is not None:
        info["class_mass_offset"] = offset
    temperature = 1.0
    if loo_scores is not None and calibrate:  # loo_scores: the noise flags ran
        temperature = fit_held_out_temperature(loo_scores, y[l], noisy[l], ~unjudged)
        loo_scores = sharpen(loo_scores, temperature)
    if loo_scores is not None:
        info["loo_scores"] = loo_scores
    info["temperature"] = temperature
    F = system.F
    # Far along a chain the sink's values fall below float32's range (a 2,000-node path with a
    # label at each end: 1,573 nodes at 0, no label); there the plain harmonic function decides
    # (γ_d = 0, the nodes' rows only, after the class masses were taken from the sunk solution).
    # (candidates first: a row whose maximum is ≤ 0 sums to ≤ 0, and einsum's row sums took 0.75 ms
    # on 100k × 10 where a copy of the unknowns' rows and numpy's max over rows of C values took 5)
    sunk = system.u[:0]
    if gamma_d > 0:
        candidates = system.u[np.einsum("ij->i", F)[system.u] <= 0]
        sunk = candidates[F[candidates].max(axis=1) <= 0]
    if sunk.size:
        with clock("solve"):
            plain = _solve_system(W, Y_clamped, clamped, **{**kw, "degree": degree / (1.0 + gamma_d)},
                                  reachable=_reachable(component, clamped), mass_target=None)
        F = F.copy()
        F[sunk] = plain.F[sunk]
        info["n_sunk"] = int(sunk.size)
    if cut_edges:
        F = F.copy() if F is system.F else F
        faint = _attach_faint_nodes(problem.W.tocsr(), W, F, labeled, gamma_d)
        if faint.size:
            info["n_faint"] = int(faint.size)
            info["faint_nodes"] = faint  # which: the run's warning names them
    labels, confidence = _finish(F, mass, temperature, offset)
    if loo_label is not None and loo_scores is not None and len(loo_label[0]):
        idx, cls = loo_label
        labels[idx] = cls
        confidence[idx] = loo_scores[np.searchsorted(l, idx), cls]
    # the rest: parameter checks, flags and class masses, calibration, labels and confidences
    info["timings"] = {**clock.seconds, "other": clock.elapsed - sum(clock.seconds.values())}
    params = dict(gamma_g=gamma_g, gamma_d=gamma_d, class_mass=class_mass, noise_threshold=noise_threshold, loo=loo,
                  noisy_labels=noisy_labels, detect_noise=detect_noise, calibrate=calibrate, solver=solver,
                  resolve_hops=resolve_hops)
    return Prediction(labels, confidence, noisy, F, "harmonic", params, info, noise_score)
