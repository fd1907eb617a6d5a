"""The /v1/learning/profiles routes over HTTP on both backends: status codes and error bodies
(each with its code), the slot routes before the profile-id route, nothing written on an
error, a retrieval ranked by the activated profile naming it, and the body an evaluation
answers saved as is."""

from __future__ import annotations

import uuid
from typing import Any

from tests.harness.http import Api

PROFILES = "/v1/learning/profiles"
EVALUATION = {
    "holdout_size": 24,
    "metric": "ndcg@10",
    "baseline_metric": 0.5,
    "proposal_metric": 0.75,
    "gain": 0.25,
    "recommended": True,
    "input_checksum": "c" * 64,
}


def post(api: Api, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return api.client.post(path, json=body, headers=headers or api.alice)


def created(api: Api, **body: Any) -> dict[str, Any]:
    response = post(api, PROFILES, {"weights": {"rrf_k": 12}, "evaluation": EVALUATION, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_a_profile_is_activated_ranks_retrievals_and_is_deactivated(api: Api) -> None:
    stored = post(api, "/v1/store", {"content": "I drink green tea.", "scope": "project"})
    assert stored.status_code == 200, stored.text
    profile = created(api, scopes=["project"])
    assert profile["scopes"] == ["project"]
    assert profile["evaluation"] == EVALUATION

    activated = post(api, f"{PROFILES}/{profile['profile_id']}/activate", {})
    assert activated.status_code == 200, activated.text
    state = activated.json()
    assert (state["action"], state["active_profile_id"], state["scopes"]) == (
        "activate",
        profile["profile_id"],
        ["project"],
    )
    assert state["actor"].startswith("owner:")
    active = api.client.get(f"{PROFILES}/active", params={"scopes": "project"}, headers=api.alice)
    assert active.status_code == 200, active.text
    assert active.json()["state"] == state
    assert active.json()["profile"]["profile_id"] == profile["profile_id"]

    query = {"query": "green tea", "filters": {"scope": "project"}}
    retrieval = post(api, "/v1/retrieve", query).json()
    assert retrieval["metrics"]["ranking_profile_id"] == profile["profile_id"]
    receipt = api.client.get(
        f"/v1/retrievals/{retrieval['metrics']['request_id']}", headers=api.alice
    ).json()
    assert receipt["config"]["ranking_profile_id"] == profile["profile_id"]
    assert receipt["config"]["fusion"]["rrf_k"] == 12
    replay = api.client.get(
        f"/v1/retrievals/{retrieval['metrics']['request_id']}/replay", headers=api.alice
    ).json()
    assert (replay["matches"], replay["ranking_profile_id"]) == (True, profile["profile_id"])
    # Unfiltered retrievals use the owner-wide slot, which has no profile.
    unfiltered = post(api, "/v1/retrieve", {"query": "green tea"}).json()
    assert unfiltered["metrics"]["ranking_profile_id"] is None

    off = post(
        api, f"{PROFILES}/deactivate", {"change_id": state["change_id"], "scopes": ["project"]}
    )
    assert off.status_code == 200, off.text
    history = api.client.get(
        f"{PROFILES}/history", params={"scopes": ["project"]}, headers=api.alice
    ).json()
    assert [h["action"] for h in history] == ["deactivate", "activate"]
    after = post(api, "/v1/retrieve", query).json()
    assert after["metrics"]["ranking_profile_id"] is None


def test_refusals_have_their_codes_and_write_nothing(api: Api) -> None:
    unevaluated = created(api, evaluation=None)
    refused = post(api, f"{PROFILES}/{unevaluated['profile_id']}/activate", {})
    assert refused.status_code == 409
    assert refused.json() == {
        "detail": "This ranking profile was not evaluated on held-out judgments",
        "error": "ranking_profile_not_evaluated",
    }
    not_recommended = created(
        api,
        evaluation={**EVALUATION, "proposal_metric": 0.4, "gain": -0.1, "recommended": False},
    )
    refused = post(api, f"{PROFILES}/{not_recommended['profile_id']}/activate", {})
    assert refused.status_code == 409
    assert refused.json()["error"] == "ranking_profile_not_recommended"

    good = created(api)
    on = post(api, f"{PROFILES}/{good['profile_id']}/activate", {}).json()
    stale = post(api, f"{PROFILES}/deactivate", {"change_id": str(uuid.uuid4()), "scopes": []})
    assert stale.status_code == 409
    assert stale.json()["error"] == "stale_ranking_change"
    never = post(
        api,
        f"{PROFILES}/rollback",
        {"change_id": on["change_id"], "scopes": [], "profile_id": unevaluated["profile_id"]},
    )
    assert never.status_code == 409
    assert never.json()["error"] == "ranking_profile_never_active"
    unknown = post(api, f"{PROFILES}/{uuid.uuid4()}/activate", {"change_id": on["change_id"]})
    assert unknown.status_code == 404
    history = api.client.get(f"{PROFILES}/history", headers=api.alice).json()
    assert history == [on]


def test_bad_input_is_a_422_and_saves_no_profile(api: Api) -> None:
    bodies: list[dict[str, Any]] = [
        {"weights": {"rrf_k": 0}},
        {"weights": {"unknown_weight": 1.0}},
        {"weights": {}, "scopes": ["nowhere"]},
        {"weights": {}, "evaluation": {**EVALUATION, "gain": 0.5}},
        {"weights": {}, "evaluation": {**EVALUATION, "input_checksum": "not hex"}},
        {"weights": {}, "colour": "red"},
        # A channel the fusion does not rank, or a weight out of range, would fail retrievals.
        {"weights": {"channel_weights": {"bm25": 2.0}}, "evaluation": EVALUATION},
        {"weights": {"channel_weights": {"vector": 11.0}}, "evaluation": EVALUATION},
    ]
    for body in bodies:
        response = post(api, PROFILES, body)
        assert response.status_code == 422, body
    assert api.client.get(PROFILES, headers=api.alice).json() == {"items": []}
    bad_slot = api.client.get(f"{PROFILES}/active", params={"scopes": "x"}, headers=api.alice)
    assert bad_slot.status_code == 422


def test_profiles_are_listed_in_pages_and_read_by_id(api: Api) -> None:
    ids = sorted(created(api)["profile_id"] for _ in range(3))
    first = api.client.get(PROFILES, params={"limit": 2}, headers=api.alice).json()["items"]
    rest = api.client.get(
        PROFILES, params={"limit": 2, "after_id": first[-1]["profile_id"]}, headers=api.alice
    ).json()["items"]
    assert [p["profile_id"] for p in first + rest] == ids
    one = api.client.get(f"{PROFILES}/{ids[1]}", headers=api.alice)
    assert one.status_code == 200
    assert one.json()["profile_id"] == ids[1]
    assert api.client.get(f"{PROFILES}/{ids[1]}", headers=api.bob).status_code == 404


def test_an_evaluations_profile_body_is_saved_as_is_and_activated(api: Api) -> None:
    """Judgments over HTTP, then the loop: evaluate, POST the evaluation's profile body
    unchanged, activate; the next retrieval names the profile, one asking for none does not."""
    topics = ["sailing", "violin", "pottery", "chess", "baking", "rowing", "karate", "tango"]
    plain_of = {}
    for topic in topics:
        stored = post(api, "/v1/store", {"content": f"I go to {topic} practice every Saturday."})
        plain_of[topic] = stored.json()["node_id"]
        post(api, "/v1/store", {"content": f"Actually, correction: the {topic} club moved."})
    for n in range(40):
        topic = topics[n % len(topics)]
        retrieval = post(api, "/v1/retrieve", {"query": f"{topic} practice", "limit": 5}).json()
        first = retrieval["results"][0]["node_id"]
        assert first != plain_of[topic]
        labels = {plain_of[topic]: True, first: False}
        judged = post(
            api,
            "/v1/relevance",
            {"request_id": retrieval["metrics"]["request_id"], "labels": labels},
        )
        assert judged.status_code == 200, judged.text

    evaluated = post(api, "/v1/learning/evaluate", {"holdout_share": 0.5})
    assert evaluated.status_code == 200, evaluated.text
    evaluation = evaluated.json()
    assert evaluation["recommended"] and evaluation["baseline_profile_id"] is None
    profile = post(api, PROFILES, evaluation["profile"])
    assert profile.status_code == 200, profile.text
    saved = profile.json()
    assert saved["weights"] == evaluation["proposal"]
    assert saved["evaluation"]["input_checksum"] == evaluation["input_checksum"]
    activated = post(api, f"{PROFILES}/{saved['profile_id']}/activate", {})
    assert activated.status_code == 200, activated.text

    query = {"query": f"{topics[0]} practice", "limit": 5}
    ranked = post(api, "/v1/retrieve", query).json()
    assert ranked["metrics"]["ranking_profile_id"] == saved["profile_id"]
    assert ranked["results"][0]["node_id"] == plain_of[topics[0]]
    unranked = post(api, "/v1/retrieve", {**query, "ranking_profile": "none"}).json()
    assert unranked["metrics"]["ranking_profile_id"] is None
    again = post(api, "/v1/learning/evaluate", {"holdout_share": 0.5}).json()
    assert again["baseline_profile_id"] == saved["profile_id"]
