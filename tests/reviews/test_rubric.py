"""The rubric module: one way to label outputs, and the rubric's defaults read once."""

from django.test import SimpleTestCase

from reviews.rubric import Dimension, Rubric, label_map
from tasks.blinding.render import labels


class LabelTests(SimpleTestCase):
    def test_it_labels_outputs_beyond_26_like_spreadsheet_columns(self):
        assert labels(3) == ["A", "B", "C"]
        assert labels(28)[25:] == ["Z", "AA", "AB"]
        assert labels(26 * 27 + 1)[-1] == "AAA"
        assert len(set(labels(800))) == 800

    def test_every_module_names_the_27th_output_the_same(self):
        # It was '[' on the review page and API, 'AA' in exports, and an IndexError for an
        # arbiter. Every screen, the API and the records now use these two.
        order = list(range(100, 127))
        assert labels(27)[-1] == "AA"
        assert list(label_map(order))[-1] == "AA"
        assert label_map(order)["AA"] == "126"


class RubricTests(SimpleTestCase):
    def test_it_fills_the_defaults_of_a_dimension_written_without_them(self):
        (dim,) = Rubric.from_list([{"key": "tone_of_voice"}])
        assert dim == Dimension(key="tone_of_voice", label="Tone of voice")
        assert (dim.min, dim.max, dim.max_gap, dim.level, dim.allow_na) == (
            1,
            5,
            1.0,
            "ordinal",
            False,
        )
        assert list(dim.points) == [1, 2, 3, 4, 5]
        assert dim.whole_error(3.5) == "must be a whole number on this ordinal scale"
