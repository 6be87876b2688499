# lit configuration of the fuseflow golden tests; loaded by the lit.site.cfg.py that
# CMake writes into <build>/tests/golden, which supplies the tool paths.
import os
import sys

if not hasattr(config, "filecheck"):
    lit_config.fatal("run the golden tests through CTest (`ctest -R golden`) or point lit "
                     "at <build>/tests/golden, where CMake writes lit.site.cfg.py")

config.name = "fuseflow-golden"
config.suffixes = [".test", ".cu", ".ff"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.excludes = ["README.md", "CMakeLists.txt", "__pycache__"]

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, config.test_source_root)
from golden_format import GoldenTest  # noqa: E402

config.test_format = GoldenTest(fuseflow_dump_built=bool(config.fuseflow_dump))

if config.fuseflow_dump:
    config.available_features.add("fuseflow-dump")
    config.substitutions.append(("%fuseflow-dump", config.fuseflow_dump))
# Whole word only, so paths that merely contain the name are left alone.
config.substitutions.append((r"(?<![\w/.-])FileCheck(?![\w/.-])", config.filecheck))
