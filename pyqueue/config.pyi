# Type stub of pyqueue.config: QueueConfig's fields are made at import time from the C
# struct pyq_config_t (its fields and defaults are C's), which no type checker can follow.
# tests/package/test_typing.py checks that the fields here are the C struct's.
from typing import Any, Dict, Optional, Tuple

PUBLISH: Dict[str, int]
KINDS: Dict[str, str]
DEFAULTS: Dict[str, Any]
C_DEFAULTS: Dict[str, Any]
PUBLISH_DEFAULT: str

class QueueConfig:
    """The queue's configuration, checked: pyq_config_t in Python terms."""
    FIELDS: Tuple[str, ...]
    block_size: int
    hot_blocks: int
    spill_blocks: int
    publish: str
    scan_current: bool
    retry_yield_every: int
    touch_after_write: bool
    hugepages: bool
    prefault: bool
    mlock: bool
    spill_nontemporal: bool
    prefetch: bool
    hot_nontemporal: bool
    nontemporal_backlog_kib: int
    flush_hot_kib: int
    flush_backlog_kib: int
    max_message: int
    large_bytes: int
    def __init__(self, block_size: int = ..., hot_blocks: int = ..., spill_blocks: int = ...,
                 publish: str = ..., scan_current: bool = ..., retry_yield_every: int = ...,
                 touch_after_write: bool = ..., hugepages: bool = ..., prefault: bool = ...,
                 mlock: bool = ..., spill_nontemporal: Optional[bool] = ...,
                 prefetch: bool = ..., hot_nontemporal: bool = ...,
                 nontemporal_backlog_kib: int = ..., flush_hot_kib: int = ...,
                 flush_backlog_kib: int = ..., max_message: int = ...,
                 large_bytes: int = ...) -> None: ...
    @classmethod
    def of(cls, config: Optional["QueueConfig"] = None, **overrides: Any) -> "QueueConfig": ...
    def replace(self, **changes: Any) -> "QueueConfig": ...
    def as_dict(self) -> Dict[str, Any]: ...
    def to_c(self) -> Any: ...
    @classmethod
    def from_c(cls, c: Any) -> "QueueConfig": ...
    @property
    def pool_bytes(self) -> int: ...

def converted(config: Optional[QueueConfig] = ..., **overrides: Any) -> Dict[str, Any]: ...
def refused(values: Dict[str, Any]) -> Optional[ValueError]: ...
def to_c(values: Dict[str, Any]) -> Any: ...
