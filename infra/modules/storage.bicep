// Two storage accounts, both HTTPS only, TLS 1.2, no public blob access and shared-key access off:
// - host: the Functions runtime's own storage (AzureWebJobsStorage) and the Flex Consumption deployment package;
// - data: the application's data (accepted files, results, parked events, the poll queue, the jobs table),
//   so that the app's data roles can be scoped to single containers, queues and tables.
param location string
param namePrefix string
param tags object
param acceptedContainerName string
param resultsContainerName string
param poisonContainerName string
param pollQueueName string
param cancelQueueName string
param statusLocalQueueName string
param jobsTableName string
param deploymentContainerName string
@description('Days a deleted blob or container is kept.')
param softDeleteDays int = 7

var hostName = take('sthost${uniqueString(resourceGroup().id, namePrefix)}', 24)
var dataName = take('stdata${uniqueString(resourceGroup().id, namePrefix)}', 24)

var commonProperties = {
  supportsHttpsTrafficOnly: true
  minimumTlsVersion: 'TLS1_2'
  allowBlobPublicAccess: false
  allowSharedKeyAccess: false
  defaultToOAuthAuthentication: true
  allowCrossTenantReplication: false
  publicNetworkAccess: 'Enabled'
  networkAcls: {
    bypass: 'AzureServices'
    defaultAction: 'Allow'
  }
  encryption: {
    requireInfrastructureEncryption: true
    keySource: 'Microsoft.Storage'
    services: {
      blob: { enabled: true, keyType: 'Account' }
      file: { enabled: true, keyType: 'Account' }
      queue: { enabled: true, keyType: 'Account' }
      table: { enabled: true, keyType: 'Account' }
    }
  }
}

resource hostAccount 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // checkov:skip=CKV_AZURE_59: Flex Consumption without VNet integration reaches storage over public endpoints; access is identity-only (shared keys off).
  // checkov:skip=CKV_AZURE_35: same reason: a default-deny network rule would lock out the Functions host without VNet integration.
  // checkov:skip=CKV_AZURE_206: replication is a cost choice left to the operator (Standard_LRS default; set storageSku for GRS).
  // checkov:skip=CKV2_AZURE_1: Microsoft-managed keys with infrastructure encryption; customer-managed keys are out of scope.
  // checkov:skip=CKV2_AZURE_33: private endpoints need VNet integration, which this template does not deploy.
  // checkov:skip=CKV2_AZURE_40: shared-key access is off (allowSharedKeyAccess false); the check misreads the property.
  // checkov:skip=CKV2_AZURE_41: no SAS with account keys is issued (keys are off); DOCSAI links are user-delegation SAS.
  // checkov:skip=CKV_AZURE_33: queue service logging goes to Log Analytics through diagnostic settings, not classic logging.
  // checkov:skip=CKV_AZURE_43: the name is 'sthost' + uniqueString (lowercase alphanumerics, 19 characters); the check cannot evaluate the expression.
  name: hostName
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: commonProperties
}

resource hostBlob 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: hostAccount
  name: 'default'
  properties: {
    deleteRetentionPolicy: { enabled: true, days: softDeleteDays }
    containerDeleteRetentionPolicy: { enabled: true, days: softDeleteDays }
  }
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: hostBlob
  name: deploymentContainerName
  properties: { publicAccess: 'None' }
}

resource dataAccount 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  // checkov:skip=CKV_AZURE_59: see hostAccount.
  // checkov:skip=CKV_AZURE_35: see hostAccount.
  // checkov:skip=CKV_AZURE_206: see hostAccount.
  // checkov:skip=CKV2_AZURE_1: see hostAccount.
  // checkov:skip=CKV2_AZURE_33: see hostAccount.
  // checkov:skip=CKV2_AZURE_40: see hostAccount.
  // checkov:skip=CKV2_AZURE_41: see hostAccount.
  // checkov:skip=CKV_AZURE_33: see hostAccount.
  // checkov:skip=CKV_AZURE_43: see hostAccount ('stdata' + uniqueString).
  name: dataName
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: { name: 'Standard_LRS' }
  properties: commonProperties
}

resource dataBlob 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: dataAccount
  name: 'default'
  properties: {
    deleteRetentionPolicy: { enabled: true, days: softDeleteDays }
    containerDeleteRetentionPolicy: { enabled: true, days: softDeleteDays }
  }
}

resource acceptedContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: dataBlob
  name: acceptedContainerName
  properties: { publicAccess: 'None' }
}

resource resultsContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: dataBlob
  name: resultsContainerName
  properties: { publicAccess: 'None' }
}

resource poisonContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: dataBlob
  name: poisonContainerName
  properties: { publicAccess: 'None' }
}

resource dataQueue 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: dataAccount
  name: 'default'
}

resource pollQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: dataQueue
  name: pollQueueName
}

// The Functions host moves a message that failed maxDequeueCount times to <queue>-poison.
resource pollPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: dataQueue
  name: '${pollQueueName}-poison'
}

resource cancelQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: dataQueue
  name: cancelQueueName
}

resource cancelPoisonQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: dataQueue
  name: '${cancelQueueName}-poison'
}

resource statusLocalQueue 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = {
  parent: dataQueue
  name: statusLocalQueueName
}

resource dataTable 'Microsoft.Storage/storageAccounts/tableServices@2023-05-01' = {
  parent: dataAccount
  name: 'default'
}

resource jobsTable 'Microsoft.Storage/storageAccounts/tableServices/tables@2023-05-01' = {
  parent: dataTable
  name: jobsTableName
}

output hostAccountName string = hostAccount.name
output hostBlobEndpoint string = hostAccount.properties.primaryEndpoints.blob
output hostQueueEndpoint string = hostAccount.properties.primaryEndpoints.queue
output hostTableEndpoint string = hostAccount.properties.primaryEndpoints.table
output dataAccountName string = dataAccount.name
output dataBlobEndpoint string = dataAccount.properties.primaryEndpoints.blob
output dataQueueEndpoint string = dataAccount.properties.primaryEndpoints.queue
output dataTableEndpoint string = dataAccount.properties.primaryEndpoints.table
output deploymentContainerUrl string = '${hostAccount.properties.primaryEndpoints.blob}${deploymentContainerName}'
