import re,sys
# per-syscall duration minus nested softirq and off-CPU time, for NR in the client
path,comm,nr=sys.argv[1],sys.argv[2],sys.argv[3]
rx=re.compile(r'^\s*(.+)-(\d+)\s+\[\d+\]\s+(\S+)\s+([\d.]+): (\w+): (.*)$')
enter=None;sirq=0;sst=None;off=0;offst=None;d=[];raw=[];cur=None
for ln in open(path,errors='replace'):
    m=rx.match(ln)
    if not m: continue
    c,p,t,e,a=m.group(1).strip(),int(m.group(2)),float(m.group(4)),m.group(5),m.group(6)
    if e=='softirq_entry': sst=t
    elif e=='softirq_exit' and sst is not None:
        if enter: sirq+=t-sst
        sst=None
    elif e=='sched_switch' and enter:
        mm=re.search(r'prev_pid=(\d+).*next_pid=(\d+)',a)
        if int(mm.group(1))==enter[0]: offst=t
        elif int(mm.group(2))==enter[0] and offst: off+=t-offst; offst=None
    if not c.startswith(comm): continue
    if e=='sys_enter' and a.startswith('NR %s '%nr): enter=(p,t);sirq=0;off=0
    elif e=='sys_exit' and a.startswith('NR %s '%nr) and enter and enter[0]==p:
        raw.append((t-enter[1])*1e6); d.append((t-enter[1]-sirq-off)*1e6); enter=None
for name,x in (('raw',raw),('minus softirq/off-cpu',d)):
    x=sorted(x);n=len(x);print(comm,nr,name,n,'min %.0f p25 %.0f med %.0f p75 %.0f sum %.1f ms'%(x[0],x[n//4],x[n//2],x[3*n//4],sum(x)/1e3))
