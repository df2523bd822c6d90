"""The embedded broker: kombu's filesystem transport with atomic message writes.

kombu writes a message file in place, so a worker listing the folder can move it away and read
it before the sender has finished writing — an empty or half-written message that crashes the
consumer. Here each message is written under a temporary name in a sibling folder and renamed
into the queue folder (atomic on one filesystem), so a reader only ever sees whole messages.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):  # type: ignore[override]  # kombu's own signature
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        staging = os.path.join(os.path.dirname(os.path.abspath(self.data_folder_out)), "staging")
        os.makedirs(staging, exist_ok=True)
        temporary = os.path.join(staging, name)
        # No fsync: a message lost to a power cut is re-sent by the lease sweeper, and readers
        # only need the rename to be atomic, which it is without one.
        with open(temporary, "wb") as f:
            f.write(dumps(payload).encode())
        os.replace(temporary, os.path.join(self.data_folder_out, name))


class Transport(filesystem.Transport):
    Channel = Channel
