import unittest

from temp import c_to_f, f_to_c


class TestTemp(unittest.TestCase):
    def test_freezing(self):
        self.assertEqual(f_to_c(32), 0)

    def test_round_trip(self):
        for c in (-40, 0, 37, 100):
            self.assertAlmostEqual(f_to_c(c_to_f(c)), c)


if __name__ == "__main__":
    unittest.main()
