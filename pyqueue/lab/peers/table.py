"""The peer queues the lab compares with pyqueue: one entry each, the one list.

The install-time build (pyqueue/lab/_build_peers.py), the runtime (pyqueue.lab.peers),
CI's package list (``.ci/run`` runs this file) and the README's install line
(a test compares it) all read it.  Data only: it imports nothing of pyqueue, so
the build can load it before the package can be imported.

A new peer is an adapter file in csrc/peers/ plus one entry here.

    python3 pyqueue/peer_table.py      # the Debian packages, one line (for apt-get)
"""
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Peer:
    name: str                        # the adapter's name, as pyq_adapter_get() finds it
    source: str                      # its adapter in csrc/peers/
    package: str                     # the Debian package that provides the queue
    what: str                        # what it is, for people
    probe: str                       # a tiny program using the packaged headers
    lang: str = "c"                  # "c" or "c++"
    pkgconfig: Optional[str] = None  # pkg-config module for flags, if any


PEERS = (
    Peer("ck", "ck.c", "libck-dev", "Concurrency Kit ck_ring (SPSC)",
         "#include <ck_ring.h>\n"
         "int main(void) { ck_ring_t r; ck_ring_init(&r, 4); return (int)ck_ring_capacity(&r) != 4; }\n"),
    Peer("dpdk", "dpdk.c", "libdpdk-dev", "DPDK rte_ring (SP/SC, 32-byte elements)",
         "#include <rte_ring.h>\n#include <rte_ring_elem.h>\n"
         "int main(void) { return rte_ring_get_memsize_elem(32, 1024) < 0; }\n",
         pkgconfig="libdpdk"),
    Peer("rwq", "rwq.cpp", "libreaderwriterqueue-dev", "moodycamel::ReaderWriterQueue",
         "#include <readerwriterqueue/readerwriterqueue.h>\n"
         "int main() { moodycamel::ReaderWriterQueue<int> q(4); int v; "
         "return !(q.try_enqueue(1) && q.try_dequeue(v)); }\n",
         lang="c++"),
    Peer("boost", "boost.cpp", "libboost-dev", "boost::lockfree::spsc_queue",
         "#include <boost/lockfree/spsc_queue.hpp>\n"
         "int main() { boost::lockfree::spsc_queue<int> q(4); int v; "
         "return !(q.push(1) && q.pop(v)); }\n",
         lang="c++"),
    Peer("atomic_queue", "atomic_queue.cpp", "libatomic-queue-dev",
         "max0x7ba atomic_queue (AtomicQueue2, SPSC)",
         "#include <atomic_queue/atomic_queue.h>\n"
         "int main() { atomic_queue::AtomicQueueB2<int, std::allocator<int>, false, false, true> q(4096); "
         "int v; return !(q.try_push(1) && q.try_pop(v)); }\n",
         lang="c++"),
)

# The Debian packages of every peer, in table order.
APT_PACKAGES = tuple(p.package for p in PEERS)
# What building the peers needs besides their packages.
BUILD_PACKAGES = ("pkg-config", "g++")

# Where a built peer lands (in pyqueue/lab/peers/) and the record of every build.
LIB_PATTERN = "libpyq_peer_%s.so"
MANIFEST = "manifest.json"

if __name__ == "__main__":
    print(" ".join(APT_PACKAGES))
