"""Write greet-1.0.0-py3-none-any.whl (a pure-Python wheel: what pip installs offline) into
the directory given."""
import sys
import zipfile

FILES = {
    "greet/__init__.py": "def hello(name):\n    return 'hello, ' + name\n",
    "greet-1.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: greet\nVersion: 1.0.0\n",
    "greet-1.0.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hone-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
RECORD = "greet-1.0.0.dist-info/RECORD"

with zipfile.ZipFile(sys.argv[1] + "/greet-1.0.0-py3-none-any.whl", "w") as z:
    for name, body in FILES.items():
        z.writestr(name, body)
    z.writestr(RECORD, "".join(f"{n},,\n" for n in [*FILES, RECORD]))
