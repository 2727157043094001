from __future__ import annotations

from toolroute.route.action import query_actions, tool_action, tool_actions


def test_tool_action_is_the_first_known_verb_of_its_name() -> None:
    assert tool_action("get_current_time") == "read"
    assert tool_action("convert_time") == "convert"
    assert tool_action("create_entities") == "create"
    assert tool_action("mcp_howtocook_getRecipeById") == "read"
    assert tool_action("deleteObservations") == "delete"


def test_a_name_without_a_known_verb_has_no_action() -> None:
    assert tool_action("mfcc") is None
    assert tool_actions(["mfcc", "read_graph"])[0].tolist()[0] == -1


def test_request_words_and_their_forms_give_the_asked_actions() -> None:
    assert query_actions("what time is it in Tokyo") == {"read"}
    assert "create" in query_actions("remember that Alice works at Acme")
    assert query_actions("Please removed the duplicates") == {"delete"}
    assert query_actions("Alice at Acme") == frozenset()
