/*
 * cuda_abi.h - the few CUDA driver API types and constants stepscope uses,
 * declared here so that nothing of NVIDIA's is needed to build: libcuda is
 * loaded at run time (dlopen) where a driver is installed.
 *
 * Values and signatures follow the CUDA Driver API reference (cuda.h):
 *   CUresult cuInit(unsigned int Flags);
 *   CUresult cuDriverGetVersion(int *driverVersion);
 *   CUresult cuCtxGetCurrent(CUcontext *pctx);
 *   CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags);
 *   CUresult cuEventRecord(CUevent hEvent, CUstream hStream);
 *   CUresult cuEventQuery(CUevent hEvent);
 *   CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
 *   CUresult cuEventDestroy(CUevent hEvent);      (exported as cuEventDestroy_v2)
 *   CUresult cuGetErrorString(CUresult error, const char **pStr);
 *   CUresult cuCtxSetCurrent(CUcontext ctx);
 *   CUresult cuMemGetInfo(size_t *free, size_t *total);   (exported as cuMemGetInfo_v2;
 *            the unversioned export is the pre-3.2 one with unsigned int
 *            outputs, which is why it is never loaded)
 * CUresult is a C enum (int-sized); CUcontext, CUevent and CUstream are
 * pointers to opaque structs.  None of these has changed since CUDA 4.0,
 * except that CUDA 12.8 added cuEventElapsedTime_v2 with the same
 * signature, which the loader prefers where it exists.
 */
#ifndef SPS_GPU_CUDA_ABI_H
#define SPS_GPU_CUDA_ABI_H

typedef int sps_cu_result;                     /* CUresult */
typedef struct sps_cu_ctx *sps_cu_context;     /* CUcontext */
typedef struct sps_cu_event *sps_cu_event;     /* CUevent */
typedef struct sps_cu_stream *sps_cu_stream;   /* CUstream; NULL: the legacy default stream */

enum {
    SPS_CUDA_SUCCESS = 0,
    SPS_CUDA_ERROR_INVALID_VALUE = 1,
    SPS_CUDA_ERROR_NOT_INITIALIZED = 3,
    SPS_CUDA_ERROR_DEINITIALIZED = 4,
    SPS_CUDA_ERROR_NO_DEVICE = 100,
    SPS_CUDA_ERROR_INVALID_CONTEXT = 201,
    SPS_CUDA_ERROR_INVALID_HANDLE = 400,
    SPS_CUDA_ERROR_NOT_READY = 600,
    SPS_CUDA_ERROR_LAUNCH_FAILED = 719,
    SPS_CUDA_ERROR_UNKNOWN = 999
};

enum { SPS_CU_EVENT_DEFAULT = 0 }; /* CU_EVENT_DEFAULT: timing enabled, spin on sync */

#endif
