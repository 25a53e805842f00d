#!/usr/bin/env python3
"""Writes cloud/aws/fake/enis.tsv: the ENI limits of EC2 instance types.

The in-memory AWS answers DescribeInstanceTypes from the embedded catalog,
which records each type's max pods but not its network-interface limits.
This table gives, per type, the maximum number of network interfaces and
IPv4 addresses per interface that EC2 describes, read from the
instance-type data the moto package ships (the AWS emulator the contract
test runs against). A type is kept only when those limits give the
catalog's max pods by the VPC CNI formula, ENIs x (IPv4 per ENI - 1) + 2,
so the fake's pod densities do not move; for the others (mostly types with
several network cards) the fake keeps deriving a layout from max pods.

Usage: python3 hack/fake-enis.py   (from the repository root)
"""
import gzip
import json
import os
import sys

import moto

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "cloud", "aws", "catalog", "aws-instance-types.jsonl")
OUT = os.path.join(ROOT, "cloud", "aws", "fake", "enis.tsv")


def main():
    source = os.path.join(os.path.dirname(moto.__file__), "ec2", "resources", "instance_types.json.gz")
    with gzip.open(source) as f:
        described = json.load(f)
    rows = []
    with open(CATALOG) as f:
        for line in f:
            entry = json.loads(line)
            name = entry["name"]
            pods = int(entry["allocatable"]["pods"])
            net = described.get(name, {}).get("NetworkInfo")
            if not net:
                continue
            enis = net["MaximumNetworkInterfaces"]
            ips = net["Ipv4AddressesPerInterface"]
            if enis * (ips - 1) + 2 == pods:
                rows.append((name, enis, ips))
    rows.sort()
    with open(OUT, "w") as f:
        f.write("# ENI limits of EC2 instance types, as DescribeInstanceTypes answers them:\n")
        f.write("# type, MaximumNetworkInterfaces, Ipv4AddressesPerInterface.\n")
        f.write("# Written by hack/fake-enis.py from moto %s's instance-type data; do not edit.\n" % moto.__version__)
        for name, enis, ips in rows:
            f.write("%s\t%d\t%d\n" % (name, enis, ips))
    print("%s: %d types" % (os.path.relpath(OUT, ROOT), len(rows)), file=sys.stderr)


if __name__ == "__main__":
    main()
