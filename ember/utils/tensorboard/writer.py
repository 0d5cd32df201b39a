"""SummaryWriter and FileWriter (torch/utils/tensorboard/writer.py): summaries become events in a
TensorBoard event file under log_dir, written by the tensorboard package's EventFileWriter."""
import os
import time

from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ember.utils.tensorboard.summary import histogram, histogram_raw, hparams, image, scalar, tensor_proto, text

__all__ = ["FileWriter", "SummaryWriter"]


class FileWriter:
    """Writes Event protocol buffers to an event file in log_dir (asynchronously, flushed every
    flush_secs or when max_queue events are pending)."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = time.time() if walltime is None else walltime
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(event_pb2.Event(summary=summary), global_step, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _no_graph(what):
    return NotImplementedError(f"SummaryWriter.{what}: recording a model's graph needs graph capture "
                               "(ember.compile / ember.fx, issue 10 'Graph mode, part 1: capture'), "
                               "which ember does not have yet")


class SummaryWriter:
    """Writes scalars, histograms, images, text and hyperparameters for TensorBoard to
    log_dir (default runs/CURRENT_DATETIME_HOSTNAME + comment)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        if not log_dir:
            import socket
            from datetime import datetime
            current_time = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", current_time + "_" + socket.gethostname() + comment)
        self.log_dir = log_dir
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        self.file_writer = self.all_writers = None
        self._get_file_writer()
        # TensorFlow's default histogram bins: exponential buckets from 1e-12 to 1e20, both signs
        v = 1e-12
        buckets, neg_buckets = [], []
        while v < 1e20:
            buckets.append(v)
            neg_buckets.append(-v)
            v *= 1.1
        self.default_bins = neg_buckets[::-1] + [0] + buckets

    def _get_file_writer(self):
        if self.all_writers is None or self.file_writer is None:
            self.file_writer = FileWriter(self.log_dir, self.max_queue, self.flush_secs,
                                          self.filename_suffix)
            self.all_writers = {self.file_writer.get_logdir(): self.file_writer}
            if self.purge_step is not None:
                step = self.purge_step
                self.file_writer.add_event(Event(step=step, file_version="brain.Event:2"))
                self.file_writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))
                self.purge_step = None
        return self.file_writer

    def get_logdir(self):
        return self.log_dir

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        if type(hparam_dict) is not dict or type(metric_dict) is not dict:
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        exp, ssi, sei = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        if not run_name:
            run_name = str(time.time())
        logdir = os.path.join(self._get_file_writer().get_logdir(), run_name)
        with SummaryWriter(log_dir=logdir) as w_hp:
            w_hp.file_writer.add_summary(exp, global_step)
            w_hp.file_writer.add_summary(ssi, global_step)
            w_hp.file_writer.add_summary(sei, global_step)
            for k, v in metric_dict.items():
                w_hp.add_scalar(k, v, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        summary = scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision)
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        walltime = time.time() if walltime is None else walltime
        fw_logdir = self._get_file_writer().get_logdir()
        for tag, scalar_value in tag_scalar_dict.items():
            fw_tag = fw_logdir + "/" + main_tag.replace("/", "_") + "_" + tag
            fw = self.all_writers.get(fw_tag)
            if fw is None:
                fw = self.all_writers[fw_tag] = FileWriter(fw_tag, self.max_queue, self.flush_secs,
                                                           self.filename_suffix)
            fw.add_summary(scalar(main_tag, scalar_value), global_step, walltime)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        self._get_file_writer().add_summary(tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None,
                      max_bins=None):
        if isinstance(bins, str) and bins == "tensorflow":
            bins = self.default_bins
        self._get_file_writer().add_summary(histogram(tag, values, bins, max_bins=max_bins),
                                            global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits,  # noqa: A002
                          bucket_counts, global_step=None, walltime=None):
        if len(bucket_limits) != len(bucket_counts):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._get_file_writer().add_summary(
            histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
            global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._get_file_writer().add_summary(image(tag, img_tensor, dataformats=dataformats),
                                            global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        import numpy as np
        figs = figure if isinstance(figure, list) else [figure]
        imgs = []
        for f in figs:
            f.canvas.draw()
            data = np.asarray(f.canvas.buffer_rgba())[:, :, :3].transpose(2, 0, 1)
            imgs.append(data)
            if close:
                import matplotlib.pyplot as plt
                plt.close(f)
        if isinstance(figure, list):
            self.add_images(tag, np.stack(imgs), global_step, walltime, dataformats="NCHW")
        else:
            self.add_image(tag, imgs[0], global_step, walltime, dataformats="CHW")

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._get_file_writer().add_summary(text(tag, text_string), global_step, walltime)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        raise _no_graph("add_graph")

    def add_onnx_graph(self, prototxt):
        raise _no_graph("add_onnx_graph")

    def flush(self):
        if self.all_writers is None:
            return
        for writer in self.all_writers.values():
            writer.flush()

    def close(self):
        if self.all_writers is None:
            return  # ignore double close
        for writer in self.all_writers.values():
            writer.flush()
            writer.close()
        self.file_writer = self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

