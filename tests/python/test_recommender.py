"""nnsuite.Recommender against the tools: the same rows give run.sh's recommendations, evaluate()
gives nn-predict's metrics, and saved folders serve with nothing else."""
import csv
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import nnsuite
from conftest import ROOT, TOOLS

RATINGS = ROOT / "samples" / "movielens" / "ratings.csv"
USERS = 60  # the first users of the bundled MovieLens ratings: seconds, not minutes


@pytest.fixture(scope="module")
def subset(tmp_path_factory):
    """The rows of the first USERS users of the bundled ratings, in the file's order, as a CSV
    (with its header) and as (user, movie, rating) tuples."""
    data, users = [], []
    with open(RATINGS, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        for r in reader:
            if r[0] not in users:
                if len(users) == USERS:
                    break
                users.append(r[0])
            data.append((int(r[0]), int(r[1]), float(r[2])))
    d = tmp_path_factory.mktemp("movielens")
    with open(d / "ratings.csv", "w") as f:
        f.write(",".join(header[:3]) + "\n")
        for u, m, r in data:
            f.write(f"{u},{m},{r}\n")
    return d, data


def run_sh(d):
    """samples/movielens/run.sh on the subset; its recs as {user: [(movie, score)]}."""
    env = dict(os.environ, NN_TOOLS=str(TOOLS))
    subprocess.run(["bash", str(ROOT / "samples" / "movielens" / "run.sh"),
                    str(d / "ratings.csv"), str(d / "run")], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    recs = {}
    for line in (d / "run" / "recs").read_text().splitlines():
        user, rest = line.split("\t")
        recs[int(user)] = [(int(m), float(s)) for m, s in
                           (x.split(",") for x in rest.split(":") if x)]
    return recs


def test_same_rows_give_run_sh_recommendations(subset, tmp_path):
    d, data = subset
    expected = run_sh(d)
    users = np.array([u for u, _, _ in data])
    movies = np.array([m for _, m, _ in data])
    rec = nnsuite.Recommender("recommender-linear-dae", work_dir=tmp_path / "w", verbose=False)
    rec.fit((users, movies))
    ids, scores = rec.recommend(sorted(expected), k=10, return_scores=True)
    assert len(expected) == USERS
    for u, got_ids, got_scores in zip(sorted(expected), ids, scores):
        assert got_ids == [m for m, _ in expected[u]], f"user {u}"
        assert np.allclose(got_scores, [s for _, s in expected[u]], atol=6e-5), f"user {u}"
        assert all(isinstance(m, int) for m in got_ids)


def test_dataframe_and_sparse_matrix_give_the_same_recommendations(subset, tmp_path):
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp
    d, data = subset
    frame = pd.read_csv(d / "ratings.csv")
    a = nnsuite.Recommender("recommender-linear-dae", work_dir=tmp_path / "a", verbose=False)
    a.fit(frame)
    # Ratings of 4 or more only, from the same frame.
    b = nnsuite.Recommender("recommender-linear-dae", work_dir=tmp_path / "b", verbose=False)
    b.fit(frame, rating_col="rating", min_rating=4.0)
    liked = frame[frame.rating >= 4.0]
    assert set(b.recommend(int(liked.userId.iloc[0]), k=3)).isdisjoint(
        liked[liked.userId == liked.userId.iloc[0]].movieId)
    # A users x items matrix whose rows and columns follow the frame's first appearances gives
    # the network of the frame itself.
    uid = list(dict.fromkeys(frame.userId))
    mid = list(dict.fromkeys(frame.movieId))
    ui, mi = {u: i for i, u in enumerate(uid)}, {m: i for i, m in enumerate(mid)}
    m = sp.csr_matrix((np.ones(len(frame), np.float32),
                       ([ui[u] for u in frame.userId], [mi[x] for x in frame.movieId])),
                      shape=(len(uid), len(mid)))
    c = nnsuite.Recommender("recommender-linear-dae", work_dir=tmp_path / "c", verbose=False)
    c.fit(m, user_ids=np.array(uid), item_ids=np.array(mid))
    assert a.recommend(uid[:5], k=10) == c.recommend(uid[:5], k=10)


def test_evaluate_matches_nn_predict(subset, tmp_path):
    d, data = subset
    # Each user's latest 3 rows held out (the file is sorted by user, then movie: "latest" is
    # just a fixed choice here).
    by_user = {}
    for u, m, _ in data:
        by_user.setdefault(u, []).append(m)
    train = [(u, m) for u, ms in by_user.items() for m in ms[:-3]]
    held = [(u, m) for u, ms in by_user.items() for m in ms[-3:]]
    held.append((by_user and next(iter(by_user)), 99999999))  # unknown to the network: dropped
    rec = nnsuite.Recommender("recommender-linear-dae", work_dir=tmp_path / "w", verbose=False)
    rec.fit((np.array([u for u, _ in train]), np.array([m for _, m in train])))
    got = rec.evaluate((np.array([u for u, _ in held]), np.array([m for _, m in held])), k=10)
    # nn-predict's metrics with the held-out rows as its Target.
    w = tmp_path / "w"
    with open(w / "held.csv", "w") as f:
        for u, m in held:
            f.write(f"{u},{m}\n")
    nnsuite.generate(w / "held.csv", w / "held.nc", "output", features=w / "features.idx",
                     samples=w / "samples.idx", rows=True)
    (w / "predict.cdl").write_text(json.dumps({
        "Version": 0.9, "Network": "network.nc", "Command": "Predict", "Data": "input.nc",
        "PredictionParameters": {"K": 10, "Output": "recs", "Target": "held.nc"}}))
    want = nnsuite.predict(w / "predict.cdl")
    # Users whose held-out movies are all unknown to the network are not counted, by either.
    assert got["users"] == want["evaluated"] and 40 < got["users"] < len(by_user)
    assert abs(got["recall"] - want["recall"][-1]) < 1e-6
    assert abs(got["precision"] - want["precision"][-1]) < 1e-6
    assert abs(got["ndcg"] - want["ndcg"][-1]) < 1e-6
    assert got["recall"] > 0


def test_save_load_and_the_tools_use_the_folder(subset, tmp_path):
    d, data = subset
    users = np.array([str(u) for u, _, _ in data])  # string ids come back as strings
    movies = np.array([f"m{m}" for _, m, _ in data])
    rec = nnsuite.Recommender("recommender-linear-dae", verbose=False)
    rec.fit((users, movies))
    folder = rec.save(tmp_path / "saved")
    del rec
    back = nnsuite.Recommender.load(folder)
    top = back.recommend(users[0], k=5)
    assert len(top) == 5 and all(isinstance(m, str) and m.startswith("m") for m in top)
    new_user = back.recommend("someone new", k=5, histories={"someone new": ["m1", "m50"]})
    assert "m1" not in new_user and "m50" not in new_user
    # nn-predict needs nothing but the folder: the network carries its items, the histories
    # filter themselves out.
    out = subprocess.run([str(TOOLS / "nn-predict"), "-n", "network.nc", "--data", "input.nc",
                          "--sample-index", "samples.idx", "-f", "input.nc", "-k", "5", "-s",
                          "recs"], cwd=folder, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    first = (Path(folder) / "recs").read_text().splitlines()[0].split("\t")
    assert first[0] == users[0]
    assert [x.split(",")[0] for x in first[1].split(":") if x] == top


def test_validation_patience_and_settings(subset, tmp_path):
    d, data = subset
    users = np.array([u for u, _, _ in data])
    movies = np.array([m for _, m, _ in data])
    rec = nnsuite.Recommender("recommender-autoencoder", work_dir=tmp_path / "w", epochs=3,
                              minibatch=16, verbose=False)
    rec.fit((users, movies), validation=0.2, patience=1, k=5)
    assert len(rec.validation_users) == round(0.2 * USERS)
    cdl = json.loads((tmp_path / "w" / "train.cdl").read_text())
    p = cdl["TrainingParameters"]
    assert (p["Epochs"], p["MiniBatch"], p["Patience"], p["ValidationK"]) == (3, 16, 1, 5)
    assert p["ValidationData"] == ["validation_input.nc", "validation_output.nc"]
    with pytest.raises(ValueError, match="not in the fitted data"):
        rec.recommend(rec.validation_users[0])
    trained = {u for u in users.tolist()} - set(rec.validation_users)
    assert len(rec.recommend(sorted(trained)[:3], k=4)) == 3


def test_errors_name_what_is_wrong(subset):
    with pytest.raises(ValueError, match=r"epoch: not a training setting \(did you mean 'epochs'"):
        nnsuite.Recommender("recommender-autoencoder", epoch=3)
    with pytest.raises(ValueError, match="shipped config"):
        nnsuite.Recommender("recommender-nonesuch")
    rec = nnsuite.Recommender("recommender-linear-dae", verbose=False)
    with pytest.raises(RuntimeError, match="not fitted"):
        rec.recommend(1)
    pair = (np.array([1, 1, 2]), np.array([5, 6, 5]))
    with pytest.raises(ValueError, match="patience: needs validation"):
        rec.fit(pair, patience=2)
    with pytest.raises(ValueError, match=r"validation: expected a share"):
        rec.fit(pair, validation=3)
    with pytest.raises(ValueError, match="may not be empty or hold a comma"):
        rec.fit((np.array(["a,b"]), np.array(["x"])))
    with pytest.raises(TypeError, match="expected a pandas DataFrame"):
        rec.fit([1, 2, 3])
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"user": [1], "item": [2], "rating": [5.0]})
    with pytest.raises(ValueError, match="no column 'userId'; columns are user, item, rating"):
        rec.fit(frame)
    with pytest.raises(ValueError, match="rating_col='rating' needs min_rating"):
        rec.fit(frame, user_col="user", item_col="item", rating_col="rating")
