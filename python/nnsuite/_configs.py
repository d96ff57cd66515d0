"""Where the shipped network configs (configs/<name>/network.json + train.cdl) are: inside the
installed package (pip install puts them in nnsuite/configs), in the build tree's copy, or in
the source tree of a checkout."""
import os

_HERE = os.path.dirname(os.path.abspath(__file__))


def _roots():
    yield os.path.join(_HERE, "configs")
    source = os.environ.get("NN_SOURCE_DIR")
    if source:
        yield os.path.join(source, "configs")


def shipped_configs():
    """The names of the shipped configs."""
    names = set()
    for root in _roots():
        if os.path.isdir(root):
            names.update(n for n in os.listdir(root)
                         if os.path.isfile(os.path.join(root, n, "train.cdl")))
    return sorted(names)


def config_dir(config):
    """The folder of `config`: a folder path holding network.json and train.cdl, or the name of a
    shipped config. ValueError naming the shipped ones otherwise."""
    path = os.fspath(config)
    if os.path.isdir(path):
        for name in ("network.json", "train.cdl"):
            if not os.path.isfile(os.path.join(path, name)):
                raise ValueError(f"config {path!r}: the folder has no {name}")
        return os.path.abspath(path)
    for root in _roots():
        candidate = os.path.join(root, path)
        if os.path.isfile(os.path.join(candidate, "train.cdl")):
            return candidate
    names = shipped_configs()
    raise ValueError(f"config {path!r}: neither a folder with network.json and train.cdl nor a "
                     f"shipped config ({', '.join(names) or 'none found'})")
