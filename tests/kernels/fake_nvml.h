/*
 * fake_nvml.h: the state of the fake libnvidia-ml (tests/kernels/fake_nvml.c) that a test sets.
 *
 * The test opens the fake with dlopen (the same handle lks_nvml_open gets) and finds
 * 'fake_nvml' (a fake_nvml_state) with dlsym; every NVML function of the fake answers
 * from it.
 *
 * Device i has the UUID "GPU-fake-i", the PCI bus id "<domain>:<0x10 + i>:00.0" (domain
 * pci_domain, 00000000 unless set) and the serial "fake-serial-i" (FAKE_NVML_UUID in the
 * environment replaces "GPU-fake-"): i is NVML's index (the PCI order), which a test
 * makes differ from the CUDA ordinals its made-up ranks use. XIDs go, as NVML's do, to
 * the event sets that watch their device (several sets: one per lks_nvml, as each process
 * of a job has its own); an XID on a device no set watches waits in the queue.
 */
#ifndef LKS_TESTS_FAKE_NVML_H
#define LKS_TESTS_FAKE_NVML_H

#define FAKE_NVML_DEVICES 4
#define FAKE_NVML_EVENTS 8
#define FAKE_NVML_SETS 4

typedef struct fake_nvml_dev {
	unsigned long long ecc_corrected, ecc_uncorrected;
	unsigned int retired_sbe, retired_dbe;
	unsigned int remap_corr, remap_unc, remap_pending, remap_failed;
	unsigned long long throttle;
	unsigned int temperature, power_mw;
	unsigned long long mem_total, mem_used;
	int temperature_rc;             /* nonzero: nvmlDeviceGetTemperature returns it */
	unsigned int clock_sm, clock_mem;  /* MHz */
	unsigned int pci_domain;        /* the PCI domain of its bus id (0 unless set) */
	int serial_rc;                  /* nonzero: nvmlDeviceGetSerial returns it (3: not
	                                   supported, as on a consumer board) */
	int events_rc;                  /* nonzero: nvmlDeviceRegisterEvents returns it */
	int watched;                    /* event sets open that watch it */
} fake_nvml_dev;

typedef struct fake_nvml_state {
	int init_rc;                    /* nonzero: nvmlInit_v2 returns it */
	unsigned int ndev;
	fake_nvml_dev dev[FAKE_NVML_DEVICES];
	int nevents;                    /* XIDs queued, taken first in first out */
	int event_dev[FAKE_NVML_EVENTS];
	unsigned long long event_xid[FAKE_NVML_EVENTS];
	int inits, shutdowns;           /* calls counted */
} fake_nvml_state;

#endif
