"""Finding the program in a completion: fences present, missing, several, unclosed, other languages."""

from rlvr_gym.verifiers.code import extract_code


def test_single_python_fence():
    assert extract_code("Here:\n```python\ndef f():\n    return 1\n```\nDone.") == "def f():\n    return 1\n"


def test_python_tag_beats_untagged_and_other_languages():
    text = "```\nuntagged = 1\n```\n```bash\nrm -rf /\n```\n```py\nchosen = 2\n```"
    assert extract_code(text) == "chosen = 2\n"


def test_untagged_fence_used_when_no_python_tag():
    assert extract_code("```\nx = 1\n```") == "x = 1\n"


def test_several_blocks_prefer_the_last_that_defines_the_entry_point():
    text = "```python\ndef f():\n    return 1\n```\nUsage:\n```python\nprint(f())\n```"
    assert extract_code(text, must_define="f") == "def f():\n    return 1\n"
    assert extract_code(text) == "print(f())\n"  # no entry point known: the last block


def test_unclosed_fence_runs_to_the_end():
    assert extract_code("```python\ndef f():\n    return 2") == "def f():\n    return 2"


def test_no_fence_plain_code_is_taken_prose_is_not():
    assert extract_code("def f():\n    return 3\n") == "def f():\n    return 3\n"
    assert extract_code("I am not sure.") is None
    assert extract_code("") is None
    assert extract_code("   \n") is None


def test_only_other_languages_or_empty_fences_give_nothing():
    assert extract_code("```bash\necho hi\n```") is None
    assert extract_code("```python\n\n```") is None


def test_indented_fences_inside_lists():
    assert extract_code("1. Write:\n   ```python\n   x = 1\n   ```") == "x = 1\n"
