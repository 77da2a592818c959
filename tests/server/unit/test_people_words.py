"""An invalid field's reason as a person who filled in a form reads it (domain/errors.py for_people)."""
import pytest

from lablease.domain.errors import Invalid, UnknownField, for_people


@pytest.mark.parametrize("field, reason, subject, said", [
    # a sentence of its own: no API field name before it
    ("extend_by", "the reservation has no end to extend", "The extension", "the reservation has no end to extend"),
    ("pool", "no pool named p3", None, "no pool named p3"),
    # a reason about its field: the form's word for it, or else the field's name
    ("duration", "must be positive", "The duration", "The duration must be positive"),
    ("take_by", "must be at least 10 seconds", None, "take_by: must be at least 10 seconds"),
    # the refused value quoted: which field held it
    ("free_until", "'tomorrowish' is not an RFC 3339 time", None, "free_until: 'tomorrowish' is not an RFC 3339 time"),
    ("duration", "'soon' is not a duration", "The duration", "The duration: 'soon' is not a duration"),
])
def test_a_reason_in_a_persons_words(field, reason, subject, said):
    assert for_people(field, reason, subject) == said
    assert Invalid(field, reason).for_people(subject) == said
    assert Invalid(field, reason).detail == f"{field}: {reason}"  # the API's words are unchanged


def test_an_unknown_field_keeps_its_suggestion():
    assert UnknownField("memory", "memory_mb").for_people("The memory") == "unknown field 'memory'; did you mean " \
                                                                           "'memory_mb'?"
