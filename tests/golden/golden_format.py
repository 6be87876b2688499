"""lit test format of the fuseflow golden tests (a module, so lit's worker processes can
unpickle it)."""

import lit.formats
import lit.Test


class GoldenTest(lit.formats.ShTest):
    """lit's shell test, run by lit's internal shell (pipes, redirections and `not` built
    in). A test that runs %fuseflow-dump is UNSUPPORTED, not FAILED, while the tool is not
    part of the build."""

    def __init__(self, fuseflow_dump_built):
        super().__init__(execute_external=False)
        self.fuseflow_dump_built = fuseflow_dump_built

    def execute(self, test, lit_config):
        if not self.fuseflow_dump_built:
            with open(test.getSourcePath(), encoding="utf-8") as source:
                if "%fuseflow-dump" in source.read():
                    return lit.Test.Result(lit.Test.UNSUPPORTED,
                                           "fuseflow-dump is not part of this build yet")
        return super().execute(test, lit_config)
