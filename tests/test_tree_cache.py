"""Exact game trees kept on disk (``training.evaluation.tree_cache``)."""

from __future__ import annotations

import numpy as np
import pytest

from cockroach_env import GameConfig
from training.evaluation import exact, tree_cache

MICRO = GameConfig.from_options(num_players=2, num_types=2, copies_per_type=2, opening_cards=1, loss_count=2, discard=0)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKROACH_CACHE_DIR", str(tmp_path))
    exact.game_tree.cache_clear()
    yield tmp_path / "trees"
    exact.game_tree.cache_clear()


def _same(a, b) -> None:
    assert a.sizes() == b.sizes()
    for name in ("parent", "action", "player", "chance", "infoset", "observation"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_a_tree_is_built_once_then_loaded_from_the_cache(cache, monkeypatch):
    built = exact.game_tree(MICRO)
    (stored,) = cache.glob("tree-*.pickle")
    assert stored == tree_cache.tree_path(MICRO)
    exact.game_tree.cache_clear()
    monkeypatch.setattr(exact, "build_tree", lambda config: pytest.fail("the cached tree was built again"))
    _same(exact.game_tree(MICRO), built)


def test_another_rule_set_or_other_game_code_is_another_file(cache, monkeypatch):
    other = GameConfig.from_options(num_players=2, num_types=3, copies_per_type=2, loss_count=2, discard=0)
    assert tree_cache.tree_path(MICRO) != tree_cache.tree_path(other)
    before = tree_cache.tree_path(MICRO)
    monkeypatch.setattr(tree_cache, "code_digest", lambda: "another version of the game's code")
    assert tree_cache.tree_path(MICRO) != before


def test_an_unreadable_file_is_built_again_and_replaced(cache):
    path = tree_cache.tree_path(MICRO)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a pickle")
    tree = exact.game_tree(MICRO)
    exact.game_tree.cache_clear()
    _same(exact.game_tree(MICRO), tree)
    assert path.read_bytes()[:1] != b"n"


def test_off_turns_the_disk_cache_off_and_an_unwritable_folder_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setenv("COCKROACH_CACHE_DIR", "off")
    assert tree_cache.tree_path(MICRO) is None
    exact.game_tree.cache_clear()
    assert exact.game_tree(MICRO).sizes()["histories"] > 0
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would go")
    monkeypatch.setenv("COCKROACH_CACHE_DIR", str(blocked))
    exact.game_tree.cache_clear()
    assert exact.game_tree(MICRO).sizes()["histories"] > 0
    assert list(tmp_path.iterdir()) == [blocked]
    exact.game_tree.cache_clear()
