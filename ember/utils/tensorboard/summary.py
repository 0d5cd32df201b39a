"""Summary protocol buffers (torch/utils/tensorboard/summary.py): scalars, histograms, images,
text and hyperparameters, from ember tensors, NumPy arrays or Python numbers."""
import io

import numpy as np
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

__all__ = ["make_np", "scalar", "histogram", "histogram_raw", "make_histogram", "image", "make_image",
           "text", "hparams", "tensor_proto"]


def make_np(x):
    """A NumPy array of an ember tensor (detached, on the CPU), a NumPy array or a Python number."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    from ember.core.tensor_impl import TensorImpl  # lazy: only tensors need the class
    if isinstance(x, TensorImpl):
        if x.device.type == "meta":
            return np.random.randn(1)
        return x.detach().cpu().numpy()
    raise NotImplementedError(f"Got {type(x)}, but numpy array or torch tensor are expected.")


def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    tensor = make_np(tensor).squeeze()
    if tensor.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). \
            Was given size: {tensor.size} and {tensor.ndim} dimensions.")
    value = float(tensor)
    if new_style:
        proto = (TensorProto(double_val=[value], dtype="DT_DOUBLE") if double_precision
                 else TensorProto(float_val=[value], dtype="DT_FLOAT"))
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
        return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=smd)])
    return Summary(value=[Summary.Value(tag=name, simple_value=value)])


def tensor_proto(tag, tensor):
    a = make_np(tensor)
    kinds = {np.dtype(np.float16): ("DT_HALF", "half_val"), np.dtype(np.float32): ("DT_FLOAT", "float_val"),
             np.dtype(np.float64): ("DT_DOUBLE", "double_val"), np.dtype(np.int32): ("DT_INT32", "int_val"),
             np.dtype(np.int64): ("DT_INT64", "int64_val"), np.dtype(np.bool_): ("DT_BOOL", "bool_val")}
    if a.dtype not in kinds:
        raise ValueError(f"{a.dtype} is not a supported dtype for add_tensor")
    dt, field = kinds[a.dtype]
    vals = a.reshape(-1).tolist() if a.dtype != np.float16 else a.reshape(-1).view(np.uint16).tolist()
    proto = TensorProto(dtype=dt, tensor_shape=TensorShapeProto(
        dim=[TensorShapeProto.Dim(size=s) for s in a.shape]), **{field: vals})
    smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="tensor"))
    return Summary(value=[Summary.Value(tag=tag, metadata=smd, tensor=proto)])


def histogram(name, values, bins, max_bins=None):
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):  # noqa: A002
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None):
    """A HistogramProto of `values` (the logic of TensorFlow's histogram.cc, as torch's)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    num_bins = len(counts)
    if max_bins is not None and num_bins > max_bins:
        subsampling = num_bins // max_bins
        remainder = num_bins % subsampling
        if remainder != 0:
            counts = np.pad(counts, pad_width=[[0, subsampling - remainder]], mode="constant",
                            constant_values=0)
        counts = counts.reshape(-1, subsampling).sum(axis=-1)
        new_limits = np.empty((counts.size + 1,), limits.dtype)
        new_limits[:-1] = limits[:-1:subsampling]
        new_limits[-1] = limits[-1]
        limits = new_limits
    # the support of the histogram: from the first to the last non-empty bin, with one empty
    # bin on the left (TensorBoard shows right limits only)
    cum_counts = np.cumsum(np.greater(counts, 0))
    start, end = np.searchsorted(cum_counts, [0, cum_counts[-1] - 1], side="right")
    start, end = int(start), int(end) + 1
    counts = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    if counts.size == 0 or limits.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(),
                          bucket=counts.tolist())


def convert_to_HWC(tensor, input_format):
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. \
            input_format: {input_format}")
    if len(tensor.shape) != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. \
        tensor shape: {tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    hw = tensor.transpose([input_format.find(c) for c in "HW"])
    return np.stack([hw, hw, hw], 2)


def make_grid(images, ncols=8):
    """N images (N1HW or N3HW) tiled into one CHW canvas, ncols wide."""
    if images.shape[1] == 1:
        images = np.concatenate([images, images, images], 1)
    if images.ndim != 4 or images.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    nimg, _, H, W = images.shape
    ncols = min(nimg, ncols)
    nrows = int(np.ceil(float(nimg) / ncols))
    canvas = np.zeros((3, H * nrows, W * ncols), dtype=images.dtype)
    for i in range(nimg):
        y, x = divmod(i, ncols)
        canvas[:, y * H:(y + 1) * H, x * W:(x + 1) * W] = images[i]
    return canvas


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    tensor = convert_to_HWC(make_np(tensor), dataformats)
    scale = 1 if tensor.dtype == np.uint8 else 255  # floats are in [0, 1]
    tensor = (tensor.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(tensor, rescale=rescale))])


def make_image(tensor, rescale=1):
    """An HWC uint8 array as a PNG Summary.Image (needs Pillow, as torch's does)."""
    from PIL import Image  # lazy: Pillow is needed for images only

    height, width, channel = tensor.shape
    img = Image.fromarray(tensor).resize((int(width * rescale), int(height * rescale)),
                                         Image.Resampling.LANCZOS)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return Summary.Image(height=height, width=width, colorspace=channel,
                         encoded_image_string=out.getvalue())


def text(tag, text):
    plugin_data = SummaryMetadata.PluginData(plugin_name="text",
                                             content=TextPluginData(version=0).SerializeToString())
    tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode(encoding="utf_8")],
                         tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary",
                                        metadata=SummaryMetadata(plugin_data=plugin_data), tensor=tensor)])


def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The Experiment, SessionStartInfo and SessionEndInfo summaries of the hparams plugin."""
    from google.protobuf import struct_pb2
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION, PLUGIN_NAME,
                                                      SESSION_END_INFO_TAG, SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    from ember.core.tensor_impl import TensorImpl  # lazy: as in make_np

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(
                isinstance(d, type(hparam_dict[k])) for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")
    hps = []
    ssi = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        if isinstance(v, (int, float)):  # a bool too, as torch's order has it
            kind, field, typ = "number_value", "number_value", "DATA_TYPE_FLOAT64"
        elif isinstance(v, str):
            kind, field, typ = "string_value", "string_value", "DATA_TYPE_STRING"
        elif isinstance(v, bool):
            kind, field, typ = "bool_value", "bool_value", "DATA_TYPE_BOOL"
        elif isinstance(v, TensorImpl):
            ssi.hparams[k].number_value = make_np(v)[0]
            hps.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
            continue
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")
        setattr(ssi.hparams[k], kind, v)
        domain = None
        if k in hparam_domain_discrete:
            domain = struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d})
                                                  for d in hparam_domain_discrete[k]])
        hps.append(HParamInfo(name=k, type=DataType.Value(typ), domain_discrete=domain))

    def wrap(tag, **content):
        data = HParamsPluginData(version=PLUGIN_DATA_VERSION, **content)
        smd = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name=PLUGIN_NAME, content=data.SerializeToString()))
        return Summary(value=[Summary.Value(tag=tag, metadata=smd)])

    exp = Experiment(hparam_infos=hps, metric_infos=[MetricInfo(name=MetricName(tag=k)) for k in metric_dict])
    return (wrap(EXPERIMENT_TAG, experiment=exp), wrap(SESSION_START_INFO_TAG, session_start_info=ssi),
            wrap(SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))
