"""The Redis frontier on a real three-master Redis Cluster: the shared scenarios, hosts spread over the masters,
harvester processes sharing the frontier, one of them killed."""

from __future__ import annotations

import json
import signal
import threading
import time
import uuid

import pytest
from conftest import JobDir, free_port
from harvesters import (
    TOPIC,
    GatedPage,
    assert_clean_exit,
    delete_job_keys,
    expected_urls,
    harvester_command,
    host_gaps,
    hosts_web,
    page_fetches,
    redis_counts,
    start,
    stored_urls,
    wait_for,
    wait_until_opened,
)
from redis.cluster import RedisCluster
from rediscluster import LocalCluster

# The frontier contract (tests/test_frontier.py) and the single Redis's own scenarios, run here on the cluster.
from test_frontier import (  # noqa: F401
    mark,
    test_a_round_holds_one_url_per_unlocked_host,
    test_abandoned_lease_comes_back_to_another_harvester,
    test_best_first_gives_barren_hosts_fewer_turns,
    test_best_first_takes_the_highest_priorities_first,
    test_best_first_waits_for_a_busy_host_with_better_urls,
    test_breadth_first_is_first_marked_first_fetched,
    test_breadth_first_time_takes_one_url_per_host_each_round,
    test_claim_locks_the_host_for_the_lease,
    test_complete_clears_the_mark_and_sets_locks,
    test_complete_counts_each_hosts_fetches_and_relevant_pages_decayed,
    test_conditional_get_headers_are_kept_when_none_is_given,
    test_counts_and_hosts_follow_marks_and_locks,
    test_crawl_delay_lengthens_the_host_lock,
    test_higher_priority_first_within_a_host,
    test_host_counts_count_the_hosts_hosts_lists_and_their_locks,
    test_ipagerank_prefers_links_from_relevant_pages,
    test_links_are_kept_only_for_the_pagerank_strategies,
    test_marking_is_idempotent_and_keeps_first_state,
    test_pagerank_fetches_the_most_linked_page_first,
    test_per_host_bound_refuses_new_urls,
    test_release_gives_the_url_back_without_counting,
    test_release_with_now_waits_for_the_crawl_delay,
    test_robots_answers_are_cached_until_they_expire,
    test_robots_keeps_binary_bodies_and_missing_answers,
    test_state_is_shared_and_survives_reopening,
    test_statuses_tell_known_urls_and_their_last_status,
    test_unavailable_keeps_the_url_marked_and_counts_retries,
    test_url_given_up_after_max_attempts_without_completion,
)
from test_frontier_redis import (  # noqa: F401
    connect,
    frontier,
    harvester_frontier,
    job,
    open_frontier,
    test_a_frontier_a_harvester_of_layout_4_wrote_is_upgraded_when_opened,
    test_a_frontier_in_an_old_layout_is_refused_naming_the_way_back,
    test_a_frontier_of_layout_3_gets_its_heads_when_opened,
    test_a_leased_url_claimed_late_renews_its_lease,
    test_a_leased_url_whose_lease_ran_out_and_was_taken_is_not_claimed_twice,
    test_a_lone_harvester_keeps_the_strategys_order_across_leased_parts_of_a_round,
    test_best_first_rounds_are_the_embedded_frontiers_over_many_hosts_and_priorities,
    test_closing_gives_back_what_the_round_leased_and_nobody_claimed,
    test_harvesters_at_work_rank_their_own_shares_and_one_alone_ranks_everything,
    test_harvesters_leasing_their_rounds_never_hand_out_the_same_url,
    test_harvesters_opening_a_new_frontier_at_once_all_take_its_marker,
    test_keys_stay_under_the_job_prefix,
    test_two_harvesters_never_hold_one_host_at_once,
)
from test_frontier_redis import (
    test_answers_like_the_embedded_frontier_under_random_operations as answers_like_the_embedded_frontier,
)
from test_online_links import crawl_outcomes, online_scorer

from combine_scrapy.context import link_model_store
from combine_scrapy.frontier.redis import CLUSTER_BUCKETS, OutageRetry, RedisFrontier
from combine_scrapy.operations.sampleweb import LoopbackWeb

pytestmark = [pytest.mark.services, pytest.mark.crawl]  # a Redis Cluster of its own; harvester processes

CLUSTER_PARAMS = {"redis_cls": "redis.cluster.RedisCluster"}
HOSTS = [f"127.0.0.{n}" for n in range(41, 47)]
WAIT = 0.4
PAGES = 10


@pytest.mark.parametrize("seed", range(2))
def test_answers_like_the_embedded_frontier_under_random_operations_on_the_cluster(frontier, tmp_path, seed):
    answers_like_the_embedded_frontier(frontier, tmp_path, seed)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("redis-cluster")) as started:
        yield started


@pytest.fixture
def redis_settings(cluster) -> dict:
    return {"REDIS_URL": cluster.url, "REDIS_PARAMS": CLUSTER_PARAMS}


def test_redis_params_redis_cls_gives_a_cluster_client_with_redis_pys_retries(cluster, job):
    frontier = RedisFrontier.from_settings({"REDIS_URL": cluster.url, "REDIS_PARAMS": {**CLUSTER_PARAMS, "socket_timeout": 7}}, job)
    try:
        assert isinstance(frontier.server, RedisCluster)
        assert not isinstance(frontier.server.retry, OutageRetry)
        assert frontier.server.get_connection_kwargs()["socket_timeout"] == 7
        assert len(frontier.server.get_primaries()) == 3
    finally:
        frontier.close()


def test_a_new_frontier_on_the_cluster_gets_the_clusters_buckets_unless_the_setting_says(job, open_frontier):
    fitted, chosen = open_frontier(job), open_frontier(f"{job}-chosen", buckets=4)
    try:
        mark(fitted, "http://a/1")
        mark(chosen, "http://a/1")
        assert fitted.server.get(fitted.connection.key("buckets")) == str(CLUSTER_BUCKETS).encode()
        assert chosen.server.get(chosen.connection.key("buckets")) == b"4"
    finally:
        chosen.delete_all()
        fitted.close()
        chosen.close()


def test_hosts_spread_over_every_master(cluster, open_frontier):
    job = "spread-cluster"  # a fixed name: the same buckets land on the same masters every run
    frontier = open_frontier(job)
    try:
        frontier.mark([(f"http://h{n}.test/{page}", f"h{n}.test", 0.0) for n in range(300) for page in range(2)])
        assert len(frontier.ready(0.0)) == 300
        keys = cluster.node_keys()
        assert sum(keys.values()) > 600   # u: and q: a host, and each bucket's own
        assert all(count > sum(keys.values()) / 5 for count in keys.values()), keys
        assert frontier.counts(0.0).hosts == 300
    finally:
        frontier.delete_all()
        frontier.close()
    assert sum(cluster.node_keys().values()) == 0


def test_harvesters_add_up_their_link_models_in_the_cluster(frontier, tmp_path, job):
    """The learned link model's key is updated with WATCH/MULTI: a transaction in the key's slot."""
    store = link_model_store(frontier, tmp_path, job)
    first, second = online_scorer(store=store), online_scorer(store=link_model_store(frontier, tmp_path, job))
    crawl_outcomes(first, 10)
    crawl_outcomes(second, 10)
    first.learner.sync()
    second.learner.sync()
    resumed = online_scorer(store=store)
    resumed.learner.sync()
    assert resumed.learner.model.positives == 20


@pytest.fixture
def job_dir(tmp_path, cluster):
    job = JobDir(topics=tmp_path / "topics", data=tmp_path / "data", name=f"cluster-{uuid.uuid4().hex[:8]}")
    yield job
    delete_job_keys(cluster.url, job.name, REDIS_PARAMS=CLUSTER_PARAMS)


def gated_web(port: int) -> tuple[dict, threading.Event]:
    sites = hosts_web(HOSTS, port, PAGES)
    gate = threading.Event()
    sites[HOSTS[0]]["/robots.txt"] = GatedPage("User-agent: *\nAllow: /\n", gate)
    return sites, gate


def test_harvesters_on_the_cluster_fetch_each_url_once_keep_the_interval_and_lose_nothing_to_a_kill(
    tmp_path, job_dir, cluster,
):
    """Three harvester processes crawl a loopback web through the cluster; one is SIGKILLed mid-crawl. Every
    URL is fetched, and fetched once, but for what the dead one held (its lease runs out, another fetches it):
    at most one URL per host, first fetched before the kill. No host is asked twice within WaitIntervalHost."""
    port = free_port(HOSTS[0])
    sites, gate = gated_web(port)
    logs = [tmp_path / f"harvester{n}.log" for n in range(3)]
    with LoopbackWeb(sites, port=port) as web:
        job_dir.write(f"WaitIntervalHost = {WAIT}\nAllowPrivateAddresses = 1\n", TOPIC, [web.url(HOSTS[0])])
        command = harvester_command(job_dir, cluster.url, f"REDIS_PARAMS={json.dumps(CLUSTER_PARAMS)}",
                                    "COMBINE_LEASE_SECONDS=3", "COMBINE_IDLE_HORIZON=20")
        harvesters = [start(command, log) for log in logs]
        wait_until_opened(logs, harvesters)
        gate.set()
        wait_for(lambda: len(web.hits) >= 25, 60, "25 fetches")
        killed_at = time.time()
        harvesters[0].send_signal(signal.SIGKILL)
        for harvester in harvesters:
            harvester.wait(timeout=120)
        hits = list(web.hits)
    assert harvesters[0].returncode == -signal.SIGKILL
    outputs = [assert_clean_exit(harvester, log) for harvester, log in zip(harvesters[1:], logs[1:])]
    assert all("'scheduler/dequeued/frontier'" in text for text in outputs)  # the work was shared
    fetched = page_fetches(hits)
    assert set(fetched) == expected_urls(sites)                              # nothing lost
    twice = [url for url, count in fetched.items() if count > 1]
    assert all(count <= 2 for count in fetched.values())
    assert len({host for host, _ in twice}) == len(twice)                    # at most one per host
    first_fetch = {}
    for hit in hits:
        first_fetch.setdefault((hit.host, hit.path), hit.time)
    assert all(first_fetch[url] < killed_at for url in twice)
    counts = redis_counts(cluster.url, job_dir.name, REDIS_PARAMS=CLUSTER_PARAMS)
    assert counts["marked"] == 0 and counts["done"] == counts["urls"] == len(expected_urls(sites))
    urls = stored_urls(job_dir)
    assert len(urls) == len(set(urls)) == len(expected_urls(sites))          # every page on a record, once
    for host, gaps in host_gaps(hits).items():
        assert all(gap >= WAIT * 0.95 for gap in gaps), (host, gaps)
