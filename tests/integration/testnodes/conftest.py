"""Put scripts/ on sys.path so the unit tests here can import the kvtestnodes package
(scripts/ is not a package and is not shipped in the collection tarball)."""
import os
import sys

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)
