"""Vulkan compute through the ``vulkan`` cffi binding: GLSL compiled to SPIR-V at run time, storage buffers,
push constants, one compute queue and fences.

What a runtime holds, created in this order and destroyed in the reverse one by :meth:`VulkanRuntime.close`
(which first waits for the queue to go idle): an instance (no layers, unless ``KERNELKIT_VULKAN_VALIDATION``
asks for Khronos' validation layer), a logical device with one compute queue, a command pool with one
command buffer and one fence, a descriptor pool, storage buffers, and per program a shader module with a
descriptor-set layout (one storage-buffer binding per pointer parameter, in order), a pipeline layout (one
push-constant range holding the scalar parameters, packed with the std430 offsets of
:func:`kernelkit.dialects.scalar_layout`) and one compute pipeline per group size (the GLSL dialect reads
the group size from specialization constants 0, 1, 2, so one SPIR-V module serves every launch shape).

A launch records its dispatch and, outside :meth:`VulkanRuntime.batch`, submits it and waits on the fence;
inside a batch the dispatches go into one command buffer with a compute-to-compute memory barrier between
consecutive ones, submitted and waited for once when the batch ends. Waits poll the fence every 0.1 s so that
Ctrl-C is seen; an interrupted wait leaves the submission in flight, and the next operation, or
:meth:`~VulkanRuntime.close`, waits for it before touching anything it uses.

Memory. On lavapipe and on integrated GPUs every memory type is host-visible, and buffers live in
host-visible, host-coherent memory that stays mapped: upload and download are ``memcpy``. A discrete GPU
reads such memory across the bus at a fraction of its own bandwidth, so there (``VkPhysicalDeviceType``
DISCRETE_GPU, or ``KERNELKIT_VULKAN_STAGING=1``) buffers are device-local and uploads and downloads go through
a host-visible staging buffer and ``vkCmdCopyBuffer``. A buffer larger than the device's
``maxStorageBufferRange`` (128 MiB on lavapipe, 4 GiB on most GPUs) cannot be bound whole, and a launch with
one raises instead of binding a part.

Programs: a GLSL compute shader has one entry point (``main``), so a :class:`~kernelkit.program.Program` for
this runtime lists exactly one kernel; its name is the runtime's handle for it, not a name in the source.
Group-shared memory is declared in the source (Vulkan has no dynamic shared memory: a launch asking for
``shared_mem`` raises). What the device can do is on the runtime: ``fp64``, ``int64``, ``f16_storage``,
``float_atomics``, ``subgroup_size`` and ``subgroup_ops``; the features found are enabled on the device.

Cached SPIR-V: modules are stored by the shared cache (suffix ``.spv``) and checked there by length and
checksum; what the cache returns is also checked for SPIR-V's header before the driver sees it.

Environment variables:

``KERNELKIT_VULKAN_DEVICE``
    Index of the physical device to use (the order :func:`reports` lists). A device that fails the probe
    makes Vulkan unavailable with that reason; there is no silent move to another device.
``KERNELKIT_VULKAN_VALIDATION``
    ``1`` enables ``VK_LAYER_KHRONOS_validation`` where installed (a warning names it otherwise).
``KERNELKIT_VULKAN_STAGING``
    ``1`` / ``0`` forces device-local buffers with staging copies on or off (default: on for discrete GPUs).
``KERNELKIT_GLSLANG``
    The GLSL compiler to use (see :mod:`kernelkit.glsl_compiler`).
"""

from __future__ import annotations

import os
import struct
import threading
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from kernelkit import glsl_compiler
from kernelkit.dialects import GLSL, Param, scalar_layout
from kernelkit.emitter import Emitter
from kernelkit.program import Kernel, KernelSignature, LaunchConfig, Program
from kernelkit.runtime import DeviceRuntime

DEVICE_ENV = "KERNELKIT_VULKAN_DEVICE"
VALIDATION_ENV = "KERNELKIT_VULKAN_VALIDATION"
STAGING_ENV = "KERNELKIT_VULKAN_STAGING"

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"

#: remedies, by what is missing
REMEDY_BINDING = "pip install vulkan"
REMEDY_LOADER = "apt-get install libvulkan1 (and mesa-vulkan-drivers for lavapipe, Vulkan on the processor)"
REMEDY_DRIVER = "apt-get install mesa-vulkan-drivers gives lavapipe, a Vulkan device on the processor"

#: struct codes of the scalar kinds (push constants are little-endian on every Vulkan device we can reach)
_PACK = {"int": "<i", "i64": "<q", "u32": "<I", "u64": "<Q", "f32": "<f", "f64": "<d"}

#: nanoseconds per fence poll: short enough for Ctrl-C to be seen promptly
_POLL_NS = 100_000_000

#: descriptor sets per pool before a batch has to be submitted early (and the pool reset)
_POOL_SETS = 256
_POOL_DESCRIPTORS = 4096

#: device type -> preference rank (lower first) and name
_TYPES = {2: (0, "discrete-gpu"), 1: (1, "integrated-gpu"), 3: (2, "virtual-gpu"), 0: (3, "other"),
          4: (4, "cpu")}


def _import_vk() -> Any:
    import vulkan

    return vulkan


def _version(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def _name(exc: BaseException) -> str:
    """The binding's exceptions carry no message: their class is the VkResult."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class VulkanBuffer:
    """A storage buffer on one Vulkan device: ``nbytes`` usable bytes.

    Freed when the last reference goes (or when its runtime closes, after which it must not be used).
    """

    def __init__(self, runtime: VulkanRuntime, nbytes: int, handle: Any, memory: Any, size: int,
                 mapped: np.ndarray | None):
        self.runtime = runtime
        self.nbytes = nbytes
        self.handle = handle
        self.memory = memory
        #: bytes of the VkBuffer (``nbytes`` rounded up to whole 32-bit words)
        self.size = size
        #: the host's view of host-visible memory (None for device-local memory behind staging)
        self.mapped = mapped
        self._finalizer = weakref.finalize(self, runtime._free_buffer, id(self))
        # at interpreter exit the runtime's close() releases buffers, after draining its queue
        self._finalizer.atexit = False

    def __repr__(self) -> str:
        return f"<VulkanBuffer {self.nbytes} bytes on {self.runtime.device_name}>"


class _Module:
    """One shader module and the layouts and pipelines made from it (destroyed together)."""

    def __init__(self, runtime: VulkanRuntime, handle: Any):
        self.handle = handle
        self.objects: list[tuple[str, Any]] = []  # ("pipeline" | "pipeline_layout" | "set_layout", handle)
        self._finalizer = weakref.finalize(self, runtime._free_module, id(self))
        self._finalizer.atexit = False


class _Pipeline:
    """The handle of one kernel: its layouts, and its compute pipelines by group size."""

    def __init__(self, module: _Module, signature: KernelSignature, set_layout: Any, pipeline_layout: Any,
                 push_size: int):
        self.module = module
        self.signature = signature
        self.set_layout = set_layout
        self.pipeline_layout = pipeline_layout
        self.push_size = push_size
        slots, _ = scalar_layout(signature.params)
        scalar_args = [i for i, p in enumerate(signature.params) if not p.pointer]
        #: (argument position, where it goes in the push constants) of each scalar
        self.scalars = list(zip(scalar_args, slots))
        self.pointers = [i for i, p in enumerate(signature.params) if p.pointer]
        self.by_block: dict[tuple[int, int, int], Any] = {}


class VulkanRuntime(DeviceRuntime):
    """Programs, buffers and launches on one Vulkan physical device.

    Parameters
    ----------
    device_index : int
        Index of the physical device in the order the instance lists them (see :func:`reports`).
    staging : bool, optional
        Device-local buffers with staging copies (True) or host-visible ones (False); None: from
        ``KERNELKIT_VULKAN_STAGING``, else True for a discrete GPU.
    """

    dialect = GLSL
    name = "vulkan"
    binary_suffix = ".spv"

    def __init__(self, device_index: int = 0, staging: bool | None = None):
        vk = _import_vk()  # before registering with the base: a missing binding leaves nothing to close
        super().__init__()
        self._vk = vk
        self._lock = threading.RLock()
        self._instance = self._device = self._queue = self._pool = self._cmd = self._fence = None
        self._descriptor_pool = None
        self._buffers: dict[int, tuple[Any, Any]] = {}
        self._modules: dict[int, _Module] = {}
        self._keep: list[Any] = []
        #: staging buffers of an interrupted copy, freed when the submission is seen complete
        self._deferred: list[tuple[Any, Any]] = []
        self._recording = False
        self._in_flight = False
        self._dispatches = 0
        self._batch_depth = 0
        try:
            compiler = glsl_compiler.find()
            if compiler is None:
                raise RuntimeError(glsl_compiler.missing_reason())
            self._compiler = compiler
            self._create(device_index, staging)
        except BaseException:
            self._release()
            self.closed = True
            raise

    # -- creation ----------------------------------------------------------------------------------------

    def _create(self, device_index: int, staging: bool | None) -> None:
        vk = self._vk
        try:
            loader = vk.vkEnumerateInstanceVersion()
        except Exception:  # a Vulkan 1.0 loader has no vkEnumerateInstanceVersion
            loader = vk.VK_MAKE_VERSION(1, 0, 0)
        api = min(loader, vk.VK_MAKE_VERSION(1, 3, 0))
        layers = _validation_layers(vk)
        app = vk.VkApplicationInfo(pApplicationName="kernelkit", applicationVersion=1,
                                   pEngineName="kernelkit", engineVersion=1, apiVersion=api)
        self._instance = vk.vkCreateInstance(
            vk.VkInstanceCreateInfo(pApplicationInfo=app, ppEnabledLayerNames=layers or None), None
        )
        physical = list(vk.vkEnumeratePhysicalDevices(self._instance))
        if not 0 <= device_index < len(physical):
            raise ValueError(f"device_index must be in [0, {len(physical)}); got {device_index!r}")
        pd = self._physical = physical[device_index]
        props = vk.vkGetPhysicalDeviceProperties(pd)
        self.device_index = device_index
        self.device_name = str(props.deviceName)
        self.device_type = _TYPES.get(props.deviceType, (3, "other"))[1]
        self.api_version = min(props.apiVersion, api)
        self.driver_version = props.driverVersion
        self._ids = (props.vendorID, props.deviceID)
        limits = props.limits
        self.max_group_size = tuple(limits.maxComputeWorkGroupSize)
        self.max_group_invocations = int(limits.maxComputeWorkGroupInvocations)
        self.max_group_count = tuple(limits.maxComputeWorkGroupCount)
        self.max_push_constants = int(limits.maxPushConstantsSize)
        self.max_shared_bytes = int(limits.maxComputeSharedMemorySize)
        self.max_buffer_range = int(limits.maxStorageBufferRange)
        if self.api_version < vk.VK_MAKE_VERSION(1, 1, 0):
            raise RuntimeError(f"{self.device_name} supports Vulkan {_version(self.api_version)}; kernelkit "
                               "needs Vulkan 1.1 (subgroups, 16-bit storage, feature queries)")
        self.target_env = "vulkan1.1"
        self.options = ("--target-env", self.target_env)

        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(pd)
        compute = [i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
        if not compute:
            raise RuntimeError(f"{self.device_name} has no compute queue")
        # a compute-only family is the dedicated async-compute queue on GPUs; else the first with compute
        dedicated = [i for i in compute if not families[i].queueFlags & vk.VK_QUEUE_GRAPHICS_BIT]
        self.queue_family = (dedicated or compute)[0]

        self._features(vk, pd)
        extensions = ["VK_EXT_shader_atomic_float"] if self.float_atomics else []
        queue_info = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family, queueCount=1,
                                                pQueuePriorities=[1.0])
        self._device = vk.vkCreateDevice(
            pd,
            vk.VkDeviceCreateInfo(pNext=self._enable, pQueueCreateInfos=[queue_info],
                                  ppEnabledExtensionNames=extensions or None),
            None,
        )
        self._queue = vk.vkGetDeviceQueue(self._device, self.queue_family, 0)
        self._pool = vk.vkCreateCommandPool(
            self._device,
            vk.VkCommandPoolCreateInfo(flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                       queueFamilyIndex=self.queue_family),
            None,
        )
        self._cmd = vk.vkAllocateCommandBuffers(
            self._device,
            vk.VkCommandBufferAllocateInfo(commandPool=self._pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                           commandBufferCount=1),
        )[0]
        self._fence = vk.vkCreateFence(self._device, vk.VkFenceCreateInfo(), None)
        self._descriptor_pool = vk.vkCreateDescriptorPool(
            self._device,
            vk.VkDescriptorPoolCreateInfo(
                maxSets=_POOL_SETS,
                pPoolSizes=[vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                    descriptorCount=_POOL_DESCRIPTORS)],
            ),
            None,
        )
        self._memory = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        if staging is None:
            env = os.environ.get(STAGING_ENV, "").strip()
            staging = env not in ("", "0") if env else self.device_type == "discrete-gpu"
        self.staging = bool(staging)

    def _features(self, vk: Any, pd: Any) -> None:
        """Read what the device can do, and build the chain that enables it on the logical device."""
        names = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
        atomic = None
        if "VK_EXT_shader_atomic_float" in names:
            atomic = vk.VkPhysicalDeviceShaderAtomicFloatFeaturesEXT()
        storage16 = vk.VkPhysicalDevice16BitStorageFeatures(pNext=atomic)
        query = vk.VkPhysicalDeviceFeatures2(pNext=storage16)
        vk.vkGetPhysicalDeviceFeatures2(pd, query)
        base = query.features
        self.fp64 = bool(base.shaderFloat64)
        self.int64 = bool(base.shaderInt64)
        self.f16_storage = bool(storage16.storageBuffer16BitAccess)
        self.float_atomics = bool(atomic is not None and atomic.shaderBufferFloat32AtomicAdd)
        sub = vk.VkPhysicalDeviceSubgroupProperties()
        vk.vkGetPhysicalDeviceProperties2(pd, vk.VkPhysicalDeviceProperties2(pNext=sub))
        self.subgroup_size = int(sub.subgroupSize)
        ops = ("basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad")
        compute_ok = bool(sub.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT)
        self.subgroup_ops = frozenset(
            name for bit, name in enumerate(ops) if compute_ok and sub.supportedOperations & (1 << bit)
        )
        # enable exactly what was found (a feature not enabled is undefined behaviour when used)
        en_atomic = (
            vk.VkPhysicalDeviceShaderAtomicFloatFeaturesEXT(shaderBufferFloat32AtomicAdd=1)
            if self.float_atomics else None
        )
        en_storage = vk.VkPhysicalDevice16BitStorageFeatures(
            pNext=en_atomic, storageBuffer16BitAccess=int(self.f16_storage)
        )
        self._enable = vk.VkPhysicalDeviceFeatures2(
            pNext=en_storage,
            features=vk.VkPhysicalDeviceFeatures(shaderFloat64=int(self.fp64), shaderInt64=int(self.int64)),
        )

    # -- identification ----------------------------------------------------------------------------------

    def compiler_version(self) -> str:
        if not hasattr(self, "_compiler_version"):
            self._compiler_version = self._compiler.version()
        return self._compiler_version

    def arch(self) -> str:
        # SPIR-V does not depend on the device, only on the environment it targets: one cached module
        # serves every Vulkan device of a machine
        return f"spirv for {self.target_env}"

    def max_block(self) -> int:
        return min(self.max_group_invocations, self.max_group_size[0])

    # -- programs ----------------------------------------------------------------------------------------

    def _build(self, program: Program) -> tuple[bool, Any, str]:
        self._check_program(program)
        ok, spirv, log = self._compiler.compile(
            program.source, self.target_env, tuple(program.options), program.name
        )
        if not ok:
            return False, None, log
        assert spirv is not None
        handles, module = self._load(spirv, program)
        return True, (handles, module, spirv), log

    def _load(self, binary: bytes, program: Program) -> tuple[dict[str, Any], Any]:
        self._check_program(program)
        if not glsl_compiler.is_spirv(binary):
            raise ValueError(f"cached module of {program.name!r} is not SPIR-V ({len(binary)} bytes)")
        vk = self._vk
        with self._lock:
            self._check_open()
            handle = vk.vkCreateShaderModule(
                self._device, vk.VkShaderModuleCreateInfo(codeSize=len(binary), pCode=binary), None
            )
            module = _Module(self, handle)
            self._modules[id(module)] = module
            signature = program.kernels[0]
            pointers = [p for p in signature.params if p.pointer]
            bindings = [
                vk.VkDescriptorSetLayoutBinding(
                    binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                )
                for i in range(len(pointers))
            ]
            set_layout = vk.vkCreateDescriptorSetLayout(
                self._device, vk.VkDescriptorSetLayoutCreateInfo(pBindings=bindings or None), None
            )
            module.objects.append(("set_layout", set_layout))
            _, push_size = scalar_layout(signature.params)
            if push_size > self.max_push_constants:
                raise ValueError(
                    f"kernel {signature.name!r} has {push_size} bytes of scalar parameters; "
                    f"{self.device_name} takes at most {self.max_push_constants} bytes of push constants"
                )
            ranges = (
                [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_size)]
                if push_size else None
            )
            layout_info = vk.VkPipelineLayoutCreateInfo(pSetLayouts=[set_layout], pPushConstantRanges=ranges)
            layout = vk.vkCreatePipelineLayout(self._device, layout_info, None)
            module.objects.append(("pipeline_layout", layout))
            pipeline = _Pipeline(module, signature, set_layout, layout, push_size)
            return {signature.name: pipeline}, module

    @staticmethod
    def _check_program(program: Program) -> None:
        if len(program.kernels) != 1:
            names = ", ".join(k.name for k in program.kernels)
            raise ValueError(
                f"a GLSL program holds one compute shader (one main); program {program.name!r} lists "
                f"{len(program.kernels)} kernels ({names}): make one Program per kernel"
            )

    def _pipeline(self, pipe: _Pipeline, block: tuple[int, int, int]) -> Any:
        """The compute pipeline of ``pipe`` for group size ``block`` (specialization constants 0, 1, 2)."""
        found = pipe.by_block.get(block)
        if found is not None:
            return found
        vk = self._vk
        entries = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4) for i in range(3)]
        data = vk.ffi.from_buffer(struct.pack("<3I", *block))
        spec = vk.VkSpecializationInfo(pMapEntries=entries, dataSize=12, pData=data)
        stage = vk.VkPipelineShaderStageCreateInfo(
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=pipe.module.handle, pName="main",
            pSpecializationInfo=spec,
        )
        info = vk.VkComputePipelineCreateInfo(stage=stage, layout=pipe.pipeline_layout)
        pipeline = vk.vkCreateComputePipelines(self._device, None, 1, [info], None)[0]
        pipe.module.objects.append(("pipeline", pipeline))
        pipe.by_block[block] = pipeline
        return pipeline

    # -- memory ------------------------------------------------------------------------------------------

    def _memory_type(self, bits: int, want: int, prefer: int = 0) -> int:
        candidates = [
            i for i in range(self._memory.memoryTypeCount)
            if bits & (1 << i) and (self._memory.memoryTypes[i].propertyFlags & want) == want
        ]
        if not candidates:
            raise RuntimeError(f"{self.device_name} has no memory type with flags {want:#x} for a buffer")
        preferred = [i for i in candidates if (self._memory.memoryTypes[i].propertyFlags & prefer) == prefer]
        return (preferred or candidates)[0]

    def _new_buffer(self, nbytes: int, device_local: bool) -> tuple[Any, Any, int, np.ndarray | None]:
        vk = self._vk
        usage = (vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
                 | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        # Vulkan has no empty buffers; whole words keep every storage view of the buffer legal
        size = max(4, -(-int(nbytes) // 4) * 4)
        info = vk.VkBufferCreateInfo(size=size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
        handle = vk.vkCreateBuffer(self._device, info, None)
        memory = None
        try:
            req = vk.vkGetBufferMemoryRequirements(self._device, handle)
            host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
            local = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            index = (self._memory_type(req.memoryTypeBits, local) if device_local
                     else self._memory_type(req.memoryTypeBits, host, prefer=local))
            memory = vk.vkAllocateMemory(
                self._device, vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index), None
            )
            vk.vkBindBufferMemory(self._device, handle, memory, 0)
            mapped = None
            # device-local buffers are reached by staging copies only, even where the memory is also
            # host-visible (lavapipe, ReBAR): reading such memory from the host is slow where it is real VRAM
            if not device_local:
                mapped = np.frombuffer(vk.vkMapMemory(self._device, memory, 0, req.size, 0), dtype=np.uint8)
            # the buffer's own size, not the allocation's: descriptors may not reach past the buffer
            return handle, memory, size, mapped
        except BaseException:
            if memory is not None:
                vk.vkFreeMemory(self._device, memory, None)
            vk.vkDestroyBuffer(self._device, handle, None)
            raise

    def alloc(self, nbytes: int) -> VulkanBuffer:
        """An uninitialised storage buffer of ``nbytes`` bytes."""
        if not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise ValueError(f"nbytes must be a non-negative integer; got {nbytes!r}")
        with self._lock:
            self._check_open()
            handle, memory, size, mapped = self._new_buffer(int(nbytes), self.staging)
            buf = VulkanBuffer(self, int(nbytes), handle, memory, size, mapped)
            self._buffers[id(buf)] = (handle, memory)
            return buf

    def upload(self, host: np.ndarray) -> VulkanBuffer:
        """A new buffer holding a copy of ``host``."""
        host = np.ascontiguousarray(host)
        buf = self.alloc(host.nbytes)
        self.write(buf, host)
        return buf

    def write(self, buf: VulkanBuffer, host: np.ndarray) -> None:
        """Copy ``host`` into the start of ``buf`` (blocking; waits for recorded launches first)."""
        host = np.ascontiguousarray(host)
        self._check_buffer(buf, "buf")
        if host.nbytes > buf.nbytes:
            raise ValueError(f"host has {host.nbytes} bytes; buf holds {buf.nbytes}")
        if host.nbytes == 0:
            return
        src = host.reshape(-1).view(np.uint8)
        with self._lock:
            self._check_open()
            # launches recorded earlier may read this buffer: they run first
            self._flush()
            if buf.mapped is not None:
                buf.mapped[: host.nbytes] = src
                return
            self._staged(buf, host.nbytes, src, None)

    def download(self, buf: VulkanBuffer, out: np.ndarray) -> np.ndarray:
        """Copy the first ``out.nbytes`` bytes of ``buf`` into ``out`` (blocking) and return ``out``."""
        self._check_buffer(buf, "buf")
        if out.nbytes > buf.nbytes:
            raise ValueError(f"out has {out.nbytes} bytes; buf holds {buf.nbytes}")
        target = out if out.flags.c_contiguous else np.empty_like(out, order="C")
        if out.nbytes:
            dst = target.reshape(-1).view(np.uint8)
            with self._lock:
                self._check_open()
                self._flush()
                if buf.mapped is not None:
                    dst[:] = buf.mapped[: out.nbytes]
                else:
                    self._staged(buf, out.nbytes, None, dst)
        if target is not out:
            out[...] = target
        return out

    def _staged(self, buf: VulkanBuffer, nbytes: int, src: np.ndarray | None, dst: np.ndarray | None) -> None:
        """Copy through a host-visible staging buffer: ``src`` into ``buf``, or ``buf`` into ``dst``."""
        vk = self._vk
        handle, memory, _, mapped = self._new_buffer(nbytes, device_local=False)
        try:
            assert mapped is not None
            if src is not None:
                mapped[:nbytes] = src
            region = [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=nbytes)]
            self._begin()
            if src is not None:
                vk.vkCmdCopyBuffer(self._cmd, handle, buf.handle, 1, region)
            else:
                vk.vkCmdCopyBuffer(self._cmd, buf.handle, handle, 1, region)
            self._keep.append(buf)
            self._dispatches = 1  # what follows must wait for the copy
            self._submit_and_wait()
            if dst is not None:
                dst[:] = mapped[:nbytes]
        except BaseException:
            if self._recording:  # recorded, never submitted: drop it before the staging buffer goes
                self._abandon()
            raise
        finally:
            if self._in_flight:
                # interrupted while the copy runs: free the staging buffer once the fence says it is done
                self._deferred.append((handle, memory))
            else:
                vk.vkFreeMemory(self._device, memory, None)
                vk.vkDestroyBuffer(self._device, handle, None)

    def _check_buffer(self, buf: Any, what: str) -> None:
        if not isinstance(buf, VulkanBuffer):
            raise TypeError(f"{what} must be a VulkanBuffer from this runtime; got {type(buf).__name__}")
        if buf.runtime is not self:
            raise ValueError(f"{what} belongs to another Vulkan runtime ({buf.runtime.device_name})")
        if id(buf) not in self._buffers:
            raise ValueError(f"{what} was released (its runtime was closed)")

    def _free_buffer(self, key: int) -> None:
        with self._lock:
            entry = self._buffers.pop(key, None)
            if entry is None or self._device is None:
                return
            handle, memory = entry
            self._vk.vkDestroyBuffer(self._device, handle, None)
            self._vk.vkFreeMemory(self._device, memory, None)

    def _free_module(self, key: int) -> None:
        with self._lock:
            module = self._modules.pop(key, None)
            if module is not None and self._device is not None:
                self._destroy_module(module)

    def _destroy_module(self, module: _Module) -> None:
        vk = self._vk
        destroy = {"pipeline": vk.vkDestroyPipeline, "pipeline_layout": vk.vkDestroyPipelineLayout,
                   "set_layout": vk.vkDestroyDescriptorSetLayout}
        for kind, handle in reversed(module.objects):
            destroy[kind](self._device, handle, None)
        module.objects.clear()
        vk.vkDestroyShaderModule(self._device, module.handle, None)

    # -- execution ---------------------------------------------------------------------------------------

    def _check_launch(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        if config.shared_mem:
            raise ValueError(
                f"Vulkan has no dynamic group-shared memory (shared_mem={config.shared_mem}); declare the "
                "arrays in the source (Emitter.kernel's shared=)"
            )
        fixed = kernel.signature.block
        if fixed is not None and tuple((*fixed, 1, 1)[:3]) != config.block3:
            raise ValueError(
                f"kernel {kernel.name!r} is compiled for groups of {fixed}; got block={config.block}"
            )
        block, grid = config.block3, config.grid3
        too_wide = any(b > m for b, m in zip(block, self.max_group_size))
        if too_wide or int(np.prod(block)) > self.max_group_invocations:
            raise ValueError(
                f"block={config.block} exceeds {self.device_name}'s groups of at most {self.max_group_size} "
                f"and {self.max_group_invocations} threads"
            )
        if any(g > m for g, m in zip(grid, self.max_group_count)):
            raise ValueError(f"grid={config.grid} exceeds {self.device_name}'s {self.max_group_count} groups")
        if len(args) != len(kernel.params):
            raise TypeError(f"kernel {kernel.name!r} takes {len(kernel.params)} arguments; got {len(args)}")
        for p, a in zip(kernel.params, args):
            if p.pointer:
                self._check_buffer(a, f"argument {p.name!r}")
                if a.size > self.max_buffer_range:
                    raise ValueError(
                        f"argument {p.name!r} has {a.size} bytes; {self.device_name} binds at most "
                        f"{self.max_buffer_range} bytes per storage buffer (maxStorageBufferRange)"
                    )

    @staticmethod
    def _push_data(pipe: _Pipeline, args: list[Any]) -> bytes:
        data = bytearray(pipe.push_size)
        for position, slot in pipe.scalars:
            value = args[position]
            try:
                struct.pack_into(_PACK[slot.param.kind], data, slot.offset, value)
            except struct.error as exc:
                name, kind = slot.param.name, slot.param.kind
                message = f"argument {name!r} = {value!r} does not fit a {kind} scalar ({exc})"
                raise ValueError(message) from None
        return bytes(data)

    def launch(self, kernel: Kernel, config: LaunchConfig, args: list[Any]) -> None:
        self._check_open()
        pipe: _Pipeline = kernel.handle
        self._check_launch(kernel, config, args)
        push = self._push_data(pipe, args)
        buffers = [args[i] for i in pipe.pointers]
        vk = self._vk
        with self._lock:
            self._check_open()
            pipeline = self._pipeline(pipe, config.block3)
            self._begin()
            dset = self._descriptor_set(pipe.set_layout)
            if buffers:
                infos = [vk.VkDescriptorBufferInfo(buffer=b.handle, offset=0, range=b.size) for b in buffers]
                writes = [
                    vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=i, descriptorCount=1,
                                            descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            pBufferInfo=[info])
                    for i, info in enumerate(infos)
                ]
                vk.vkUpdateDescriptorSets(self._device, len(writes), writes, 0, None)
            cmd = self._cmd
            if self._dispatches:
                self._barrier(vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                              vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                              vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                              vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT)
            vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
            vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe.pipeline_layout, 0, 1,
                                       [dset], 0, None)
            if push:
                vk.vkCmdPushConstants(cmd, pipe.pipeline_layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push),
                                      vk.ffi.from_buffer(push))
            vk.vkCmdDispatch(cmd, *config.grid3)
            self._dispatches += 1
            self._keep.extend(buffers)
            self._keep.append(pipe)
            if self._batch_depth == 0:
                self._submit_and_wait()

    def _descriptor_set(self, set_layout: Any) -> Any:
        vk = self._vk
        info = vk.VkDescriptorSetAllocateInfo(descriptorPool=self._descriptor_pool, descriptorSetCount=1,
                                              pSetLayouts=[set_layout])
        try:
            return vk.vkAllocateDescriptorSets(self._device, info)[0]
        except (vk.VkErrorOutOfPoolMemory, vk.VkErrorFragmentedPool):
            if not self._dispatches:
                raise
        # the pool is spent by this batch's earlier launches: run them, which frees the pool, and go on
        self._submit_and_wait()
        self._begin()
        return vk.vkAllocateDescriptorSets(self._device, info)[0]

    def _barrier(self, src_stage: int, dst_stage: int, src_access: int, dst_access: int) -> None:
        vk = self._vk
        barrier = vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)
        vk.vkCmdPipelineBarrier(self._cmd, src_stage, dst_stage, 0, 1, [barrier], 0, None, 0, None)

    def _begin(self) -> None:
        """Have the command buffer recording (after the previous submission, if any, has completed)."""
        self._drain()
        if not self._recording:
            vk = self._vk
            vk.vkBeginCommandBuffer(
                self._cmd, vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            )
            self._recording = True
            self._dispatches = 0

    def _submit_and_wait(self) -> None:
        if not self._recording:
            self._drain()
            return
        vk = self._vk
        # make the shaders' and copies' writes visible to the host once the fence has signalled
        self._barrier(vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                      vk.VK_PIPELINE_STAGE_HOST_BIT,
                      vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                      vk.VK_ACCESS_HOST_READ_BIT)
        vk.vkEndCommandBuffer(self._cmd)
        self._recording = False
        vk.vkQueueSubmit(self._queue, 1, [vk.VkSubmitInfo(pCommandBuffers=[self._cmd])], self._fence)
        self._in_flight = True
        self._drain()

    def _drain(self) -> None:
        """Wait for the submission in flight, then recycle the command buffer and the descriptor sets."""
        if not self._in_flight:
            return
        vk = self._vk
        while True:
            try:
                vk.vkWaitForFences(self._device, 1, [self._fence], vk.VK_TRUE, _POLL_NS)
                break
            except vk.VkTimeout:
                continue  # poll again: Python sees a pending KeyboardInterrupt between polls
        self._in_flight = False
        vk.vkResetFences(self._device, 1, [self._fence])
        vk.vkResetCommandBuffer(self._cmd, 0)
        vk.vkResetDescriptorPool(self._device, self._descriptor_pool, 0)
        self._keep.clear()
        self._dispatches = 0
        for handle, memory in self._deferred:
            vk.vkDestroyBuffer(self._device, handle, None)
            vk.vkFreeMemory(self._device, memory, None)
        self._deferred.clear()

    def _abandon(self) -> None:
        """Drop what was recorded but not submitted (an interrupted batch); wait for what was submitted."""
        self._drain()
        if self._recording:
            vk = self._vk
            try:
                vk.vkEndCommandBuffer(self._cmd)
            finally:
                self._recording = False
                vk.vkResetCommandBuffer(self._cmd, 0)
                vk.vkResetDescriptorPool(self._device, self._descriptor_pool, 0)
                self._keep.clear()
                self._dispatches = 0

    def _flush(self) -> None:
        if self._recording:
            self._submit_and_wait()
        else:
            self._drain()

    def synchronize(self) -> None:
        if self._device is None:
            return
        with self._lock:
            self._flush()

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Record the launches inside into one command buffer, with a memory barrier between consecutive
        dispatches; submit it and wait once on exit.

        Batches nest (the outermost submits). If the body raises, what it recorded and did not yet submit is
        dropped. A batch belongs to the runtime, not to a thread: launches from other threads meanwhile join
        it.
        """
        self._check_open()
        with self._lock:
            self._batch_depth += 1
        ok = False
        try:
            yield
            ok = True
        finally:
            with self._lock:
                self._batch_depth -= 1
                if self._batch_depth == 0 and self._device is not None:
                    if ok:
                        self._flush()
                    else:
                        self._abandon()

    # -- lifetime ----------------------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for the queue, drop unsubmitted work, then destroy every Vulkan object in reverse order of
        creation. Idempotent; safe after an interrupted launch or batch."""
        if self.closed:
            return
        with self._lock:
            if self._device is not None:
                try:
                    self._abandon()
                except Exception:  # a lost device: still release what can be released
                    pass
        super().close()

    def _release(self) -> None:
        vk = self._vk
        with self._lock:
            device = self._device
            if device is not None:
                steps = [lambda: vk.vkDeviceWaitIdle(device)]
                for module in list(self._modules.values()):
                    steps.append(lambda m=module: self._destroy_module(m))
                for handle, memory in [*self._buffers.values(), *self._deferred]:
                    steps.append(lambda h=handle: vk.vkDestroyBuffer(device, h, None))
                    steps.append(lambda m=memory: vk.vkFreeMemory(device, m, None))
                if self._descriptor_pool is not None:
                    steps.append(lambda: vk.vkDestroyDescriptorPool(device, self._descriptor_pool, None))
                if self._fence is not None:
                    steps.append(lambda: vk.vkDestroyFence(device, self._fence, None))
                if self._pool is not None:
                    # frees the command buffer with it
                    steps.append(lambda: vk.vkDestroyCommandPool(device, self._pool, None))
                steps.append(lambda: vk.vkDestroyDevice(device, None))
                for step in steps:
                    try:
                        step()
                    except Exception:  # keep releasing the rest
                        pass
            self._modules.clear()
            self._buffers.clear()
            self._deferred.clear()
            self._keep.clear()
            self._device = self._queue = self._pool = self._cmd = self._fence = self._descriptor_pool = None
            if self._instance is not None:
                try:
                    vk.vkDestroyInstance(self._instance, None)
                except Exception:
                    pass
                self._instance = None


def _validation_layers(vk: Any) -> list[str]:
    if os.environ.get(VALIDATION_ENV, "").strip() in ("", "0"):
        return []
    try:
        present = {layer.layerName for layer in vk.vkEnumerateInstanceLayerProperties()}
    except Exception:
        present = set()
    if VALIDATION_LAYER in present:
        return [VALIDATION_LAYER]
    warnings.warn(
        f"{VALIDATION_ENV} asks for {VALIDATION_LAYER}, which is not installed (Debian/Ubuntu: "
        "apt-get install vulkan-validationlayers); running without it",
        RuntimeWarning,
        stacklevel=3,
    )
    return []


# -- the probe ----------------------------------------------------------------------------------------------


def _probe_program() -> Program:
    params = (Param("x", "f32", pointer=True, const=True), Param("y", "f32", pointer=True), Param("n", "int"))
    e = Emitter(GLSL)
    e.line(GLSL.prelude(set()))
    with e.kernel("kk_probe", params):
        e.line(f"const int i = {GLSL.global_index(0)};")
        with e.block("if (i < n)"):
            e.line(f"y[i] = {GLSL.literal(2.0, 'f32')} * x[i] + {GLSL.literal(1.0, 'f32')};")
    return Program(e.text(), GLSL, (KernelSignature("kk_probe", params),), name="kk_probe")


@dataclass(frozen=True)
class DeviceReport:
    """One Vulkan physical device as the probe saw it: ``reason`` is None when it built and ran the probe."""

    index: int
    name: str
    kind: str
    api: str
    reason: str | None

    @property
    def label(self) -> str:
        return f"{self.index}: {self.name} ({self.kind}, Vulkan {self.api})"


_lock = threading.RLock()
_reports: list[DeviceReport] | None = None
_failure: str | None = None
_runtimes: dict[int, VulkanRuntime] = {}


def _run_probe(index: int) -> str | None:
    rt = None
    try:
        rt = VulkanRuntime(index)
        kernel = rt.kernel(_probe_program(), "kk_probe")
        x = np.arange(64, dtype=np.float32)
        xb, yb = rt.upload(x), rt.alloc(x.nbytes)
        kernel.launch(LaunchConfig(4, 16), xb, yb, 64)
        y = rt.download(yb, np.empty_like(x))
        if not np.array_equal(y, 2 * x + 1):
            return "the probe kernel ran but returned wrong values"
        return None
    except Exception as exc:  # any failure makes the device unusable, in the driver's or compiler's words
        lines = str(exc).strip().splitlines()
        detail = next((line.strip() for line in lines if "error" in line.lower()), lines[0] if lines else "")
        return f"building or running a probe kernel failed: {type(exc).__name__}" + (f": {detail[:300]}"
                                                                                      if detail else "")
    finally:
        if rt is not None:
            rt.close()


def _enumerate(vk: Any) -> list[tuple[int, str, int, str, bool]]:
    """(index, name, type, api version, has a compute queue) of each physical device, from a short-lived
    instance."""
    app = vk.VkApplicationInfo(pApplicationName="kernelkit-probe", apiVersion=vk.VK_MAKE_VERSION(1, 1, 0))
    instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(pApplicationInfo=app), None)
    try:
        found = []
        for i, pd in enumerate(vk.vkEnumeratePhysicalDevices(instance)):
            props = vk.vkGetPhysicalDeviceProperties(pd)
            compute = any(f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT
                          for f in vk.vkGetPhysicalDeviceQueueFamilyProperties(pd))
            found.append((i, str(props.deviceName), props.deviceType, _version(props.apiVersion), compute))
        return found
    finally:
        vk.vkDestroyInstance(instance, None)


def reports() -> list[DeviceReport]:
    """Every Vulkan physical device with the probe's verdict (probed once per process)."""
    global _reports, _failure
    with _lock:
        if _reports is not None:
            return list(_reports)
        found: list[DeviceReport] = []
        _failure = None
        try:
            vk = _import_vk()
        except ImportError as exc:
            _failure = f"the vulkan package is not installed ({exc}); {REMEDY_BINDING}"
        except OSError as exc:  # the binding dlopens libvulkan.so.1 at import
            _failure = f"no Vulkan loader (libvulkan.so.1) could be loaded ({exc}); {REMEDY_LOADER}"
        else:
            try:
                devices = _enumerate(vk)
            except vk.VkErrorIncompatibleDriver:
                devices = []
                _failure = f"the Vulkan loader found no driver (VkErrorIncompatibleDriver); {REMEDY_DRIVER}"
            except Exception as exc:
                devices = []
                _failure = f"creating a Vulkan instance failed ({_name(exc)}); {REMEDY_DRIVER}"
            if not devices and _failure is None:
                _failure = f"the Vulkan loader lists no physical device; {REMEDY_DRIVER}"
            compiler = glsl_compiler.find()
            for index, name, dtype, api, compute in devices:
                kind = _TYPES.get(dtype, (3, "other"))[1]
                if not compute:
                    reason = "it has no compute queue"
                elif compiler is None:
                    reason = glsl_compiler.missing_reason()
                else:
                    reason = _run_probe(index)
                found.append(DeviceReport(index, name, kind, api, reason))
        _reports = found
        return list(found)


def choose() -> tuple[DeviceReport | None, str | None]:
    """The device to use (discrete GPUs first, then integrated, virtual, other, processors; each passing the
    probe), or None and the reason there is none."""
    found = reports()
    wanted = os.environ.get(DEVICE_ENV, "").strip()
    if wanted:
        try:
            index = int(wanted)
        except ValueError:
            return None, f"{DEVICE_ENV}={wanted!r} is not a device index (e.g. 0)"
        match = [r for r in found if r.index == index]
        if not match:
            listed = "; ".join(r.label for r in found) or "none"
            return None, f"{DEVICE_ENV}={wanted!r} names no Vulkan device (devices: {listed})"
        if match[0].reason:
            label, why = match[0].label, match[0].reason
            return None, f"{DEVICE_ENV}={wanted!r} names {label}, which cannot run: {why}"
        return match[0], None
    usable = [r for r in found if r.reason is None]
    if usable:
        rank = {name: r for r, name in _TYPES.values()}
        return min(usable, key=lambda r: (rank.get(r.kind, 3), r.index)), None
    if not found:
        return None, _failure or f"no Vulkan device found; {REMEDY_DRIVER}"
    failures = "; ".join(f"{r.label}: {r.reason}" for r in found)
    return None, f"no Vulkan device passed the probe ({failures})"


def probe() -> str | None:
    """None when a Vulkan device builds and runs the probe kernel, else why none does (never raises)."""
    try:
        return choose()[1]
    except Exception as exc:  # a broken install (a half-present driver, an unreadable ICD file, ...)
        return f"Vulkan could not be queried: {_name(exc)}"


def default_runtime() -> VulkanRuntime:
    """The runtime of the chosen device (raises RuntimeError with the reason when no device can run)."""
    report, reason = choose()
    if report is None:
        raise RuntimeError(f"Vulkan cannot run here: {reason}")
    with _lock:
        rt = _runtimes.get(report.index)
        if rt is None or rt.closed:
            rt = _runtimes[report.index] = VulkanRuntime(report.index)
        return rt.usable()


def forget() -> None:
    """Forget the probe's verdicts and close the runtimes (tests that change the environment use this)."""
    global _reports, _failure
    with _lock:
        for rt in _runtimes.values():
            rt.close()
        _runtimes.clear()
        _reports = None
        _failure = None
        glsl_compiler.find(refresh=True)
