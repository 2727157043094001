"""The operations a request asks for (route/operation.py)."""

from __future__ import annotations

from toolroute.route.operation import request_verbs


def test_request_verbs_are_the_operations_asked_unless_information_is_asked() -> None:
    assert request_verbs("Push my local commits to the origin remote.") == ("push",)
    assert request_verbs("Please book a table for two, then pay the deposit") == ("book", "pay")
    # asking for information is served by reading: nothing to check
    assert request_verbs("What is the weather in Oslo?") == ()
    assert request_verbs("I want to buy running shoes, can you find the cheapest?") == ()
    # a statement, a noun or a gerund opens no imperative
    assert request_verbs("My recipe says 350F") == ()
    assert request_verbs("Planning a trip to Yosemite") == ()
    assert request_verbs("Information about tides in Lisbon") == ()
    # known words that are never a verb's base form open nothing; unknown ones may be verbs
    assert request_verbs("Specifically, durable boots in size 9") == ()
    assert request_verbs("I bought shares yesterday") == ()
    assert request_verbs("Rebase my branch onto main, then upvote the PR") == ("rebase", "upvote")
    # a run of letters no verb is that long opens nothing (nor is it embedded as a verb)
    assert request_verbs("x" * 10_000 + " the file") == ()
    # a dot or colon inside a token ends no clause
    assert request_verbs("When does example.org expire? Renew it at 10:30") == ("renew",)
