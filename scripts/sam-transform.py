#!/usr/bin/env python3
"""Print a SAM template as CloudFormation receives it: the SAM transform
applied offline by samtranslator, through cfn-lint's own wrapper of it (the
one `cfn-lint template.yaml` runs), as JSON on stdout. Needs cfn-lint, which
installs samtranslator.

    scripts/sam-transform.py template.yaml > /tmp/transformed.json
    cfn-lint /tmp/transformed.json

Local CodeUri values become placeholder S3 URIs, as in cfn-lint; the rest is
what `sam deploy` sends after packaging."""
import json
import sys

from cfnlint.decode import decode
from cfnlint.template.transforms._sam import Transform


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: sam-transform.py <template>", file=sys.stderr)
        return 2
    template, matches = decode(sys.argv[1])
    if matches:
        for m in matches:
            print(m, file=sys.stderr)
        return 1
    t = Transform(sys.argv[1], template, "us-east-1")
    errors = t.transform_template()
    if errors:
        for m in errors:
            print(m, file=sys.stderr)
        return 1
    json.dump(t.template(), sys.stdout, indent=1, sort_keys=True, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
