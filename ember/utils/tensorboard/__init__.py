"""ember.utils.tensorboard (torch.utils.tensorboard): SummaryWriter writing TensorBoard event files
through the `tensorboard` package (an optional extra: `pip install ember[tensorboard]`). Without it,
importing this module raises the ModuleNotFoundError torch's does ("No module named 'tensorboard'")."""
import tensorboard

from ember.utils.tensorboard.writer import FileWriter, SummaryWriter

if not hasattr(tensorboard, "__version__") or tuple(
        int(p) for p in tensorboard.__version__.split(".")[:2] if p.isdigit()) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")

del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
