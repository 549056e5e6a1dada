import sys
import unittest

from greeting import greeting


class GreetingTest(unittest.TestCase):
    def test_runs_in_the_virtualenv(self):
        self.assertNotEqual(sys.prefix, sys.base_prefix, "not run by the checkout's .venv")

    def test_greets_the_world(self):
        self.assertEqual(greeting(), "hello, world")


if __name__ == "__main__":
    unittest.main()
