"""Reserved component and stream names shared by the runtime."""

DEFAULT_STREAM = "default"
SYSTEM_COMPONENT = "__system"
SYSTEM_TASK_ID = -1
TICK_STREAM = "__tick"
#: Component and stream ids starting with this prefix are reserved for sparkstorm.
RESERVED_PREFIX = "__"
